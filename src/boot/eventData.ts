/**
 * Decoding of the event bodies the measured-boot policies read: UEFI_VARIABLE_DATA (with signature
 * lists, SecureBoot-style booleans, BootOrder and load options), UEFI_IMAGE_LOAD_EVENT, UEFI_GPT_DATA,
 * firmware blobs, strings, separators, and the EV_NO_ACTION headers. Reads go through the shared
 * bounds-checked Reader, positioned on the event's bytes, so offsets in errors are log offsets.
 */
import type { Reader } from "../tpm/bytes.js"
import { decodeDevicePath, type DevicePath } from "./devicePath.js"
import { EV } from "./eventTypes.js"
import { eventString, guidToString, toHex, utf16le } from "./text.js"

export interface SignatureEntry {
  readonly SignatureOwner: string
  /** Lowercase hex without 0x. */
  readonly SignatureData: string
}
export interface SignatureList {
  /** GUID text, e.g. a5c059a1-94e4-4aa7-87b5-ab155c2bf072 (EFI_CERT_X509_GUID). */
  readonly SignatureType: string
  readonly Keys: ReadonlyArray<SignatureEntry>
}

export type VariableValue =
  | { readonly kind: "enabled"; readonly enabled: boolean }
  | { readonly kind: "signatureLists"; readonly lists: ReadonlyArray<SignatureList> }
  | { readonly kind: "signature"; readonly entry: SignatureEntry }
  | { readonly kind: "bootOrder"; readonly order: ReadonlyArray<string> }
  | { readonly kind: "loadOption"; readonly enabled: boolean; readonly description: string; readonly devicePath: DevicePath }
  | { readonly kind: "raw" }

export interface GptPartition {
  readonly typeGuid: string
  readonly uniqueGuid: string
  readonly startingLba: bigint
  readonly endingLba: bigint
  readonly attributes: bigint
  readonly name: string
}

export type EventData =
  | {
      readonly kind: "specId"
      readonly signature: string
      readonly platformClass: number
      readonly specVersion: string
      readonly uintnSize: number
      readonly algorithms: ReadonlyArray<{ readonly algorithmId: number; readonly digestSize: number }>
    }
  | { readonly kind: "startupLocality"; readonly locality: number }
  | { readonly kind: "noAction"; readonly signature: string }
  | {
      readonly kind: "variable"
      readonly variableName: string
      readonly unicodeName: string
      readonly variableData: Uint8Array
      readonly value: VariableValue
    }
  | {
      readonly kind: "imageLoad"
      readonly imageLocation: bigint
      readonly imageLength: bigint
      readonly linkTimeAddress: bigint
      readonly devicePath: DevicePath
    }
  | {
      readonly kind: "gpt"
      readonly diskGuid: string
      readonly partitions: ReadonlyArray<GptPartition>
    }
  | { readonly kind: "firmwareBlob"; readonly base: bigint; readonly length: bigint; readonly description?: string }
  | { readonly kind: "string"; readonly text: string }
  | { readonly kind: "separator"; readonly value: number }
  | { readonly kind: "raw" }

export const GUID = {
  globalVariable: "8be4df61-93ca-11d2-aa0d-00e098032b8c",
  imageSecurityDatabase: "d719b2cb-3d3a-4596-a3bc-dad00e67656f",
  shimLock: "605dab50-e046-4300-abb6-3dd810dd8b23",
  certX509: "a5c059a1-94e4-4aa7-87b5-ab155c2bf072",
  certSha256: "c1c41626-504c-4092-aca9-41f936934328"
} as const

const RAW: EventData = { kind: "raw" }
/** No real signature list or GPT holds this many entries; guards loops against absurd counts. */
const MAX_ENTRIES = 1 << 16

const guid = (r: Reader, field: string) => guidToString(r.bytes(16, field))

const u64 = (r: Reader, field: string): bigint => r.u64le(field)

/** A u64 length that must fit in what is left of the event. */
const length64 = (r: Reader, field: string, unit: number): number => {
  const at = r.offset
  const n = r.u64le(field)
  if (n * BigInt(unit) > BigInt(r.remaining)) r.fail(`length ${n} exceeds the ${r.remaining} bytes left in the event`, field, at)
  return Number(n)
}

const sameBytes16 = (a: Uint8Array, b: Uint8Array): boolean => {
  for (let i = 0; i < 16; i++) if (a[i] !== b[i]) return false
  return true
}

const signatureLists = (r: Reader, end: number): Array<SignatureList> => {
  const lists: Array<SignatureList> = []
  while (r.offset < end) {
    const start = r.offset
    const type = guid(r, "EFI_SIGNATURE_LIST.SignatureType")
    const listSize = r.u32le("EFI_SIGNATURE_LIST.SignatureListSize")
    const headerSize = r.u32le("EFI_SIGNATURE_LIST.SignatureHeaderSize")
    const sigSize = r.u32le("EFI_SIGNATURE_LIST.SignatureSize")
    if (listSize < 28 || start + listSize > end) r.fail(`SignatureListSize ${listSize} does not fit`, "EFI_SIGNATURE_LIST.SignatureListSize", start + 16)
    if (sigSize < 16) r.fail(`SignatureSize ${sigSize} is below 16`, "EFI_SIGNATURE_LIST.SignatureSize", start + 24)
    if (28 + headerSize > listSize) r.fail(`SignatureHeaderSize ${headerSize} does not fit`, "EFI_SIGNATURE_LIST.SignatureHeaderSize", start + 20)
    r.bytes(headerSize, "EFI_SIGNATURE_LIST.SignatureHeader")
    const body = listSize - 28 - headerSize
    if (body % sigSize !== 0) r.fail(`${body} bytes of signatures are not a multiple of SignatureSize ${sigSize}`, "EFI_SIGNATURE_LIST", start)
    const keys: Array<SignatureEntry> = []
    // dbx lists hold hundreds of entries of one owner: format each distinct owner GUID once.
    let ownerBytes: Uint8Array | undefined
    let owner = ""
    for (let i = 0; i < body / sigSize; i++) {
      const b = r.bytes(16, "EFI_SIGNATURE_DATA.SignatureOwner")
      if (ownerBytes === undefined || !sameBytes16(b, ownerBytes)) (ownerBytes = b), (owner = guidToString(b))
      keys.push({ SignatureOwner: owner, SignatureData: toHex(r.bytes(sigSize - 16, "EFI_SIGNATURE_DATA.SignatureData")) })
    }
    lists.push({ SignatureType: type, Keys: keys })
    if (lists.length > MAX_ENTRIES) r.fail("too many signature lists", "EFI_SIGNATURE_LIST", start)
  }
  return lists
}

const SIGNATURE_DBS = new Set(["PK", "KEK", "db", "dbx", "dbt", "dbr", "MokList", "MokListX"])
const BOOLEANS = new Set(["SecureBoot", "MokListTrusted", "AuditMode", "DeployedMode", "SetupMode"])

const variableValue = (r: Reader, type: number, name: string, dataLen: number): VariableValue => {
  const end = r.offset + dataLen
  if (BOOLEANS.has(name) && dataLen === 1) return { kind: "enabled", enabled: r.u8("VariableData") !== 0 }
  if (type === EV.EFI_VARIABLE_AUTHORITY) {
    // An authority event holds the one EFI_SIGNATURE_DATA that verified an image (SbatLevel is text).
    if (dataLen < 16 || name === "SbatLevel") return { kind: "raw" }
    const owner = guid(r, "EFI_SIGNATURE_DATA.SignatureOwner")
    return { kind: "signature", entry: { SignatureOwner: owner, SignatureData: toHex(r.bytes(end - r.offset, "EFI_SIGNATURE_DATA.SignatureData")) } }
  }
  if (SIGNATURE_DBS.has(name)) return { kind: "signatureLists", lists: signatureLists(r, end) }
  if (name === "BootOrder" && dataLen % 2 === 0) {
    const order: Array<string> = []
    for (let i = 0; i < dataLen / 2; i++) order.push(`Boot${r.u16le("BootOrder").toString(16).padStart(4, "0")}`)
    return { kind: "bootOrder", order }
  }
  if (/^Boot[0-9a-fA-F]{4}$/.test(name) && dataLen >= 6) {
    const attributes = r.u32le("EFI_LOAD_OPTION.Attributes")
    const fpLen = r.u16le("EFI_LOAD_OPTION.FilePathListLength")
    const rest = r.bytes(end - r.offset, "EFI_LOAD_OPTION.Description")
    let i = 0
    while (i + 1 < rest.length && (rest[i] !== 0 || rest[i + 1] !== 0)) i += 2
    const description = utf16le(rest.subarray(0, i))
    const path = rest.subarray(Math.min(i + 2, rest.length), Math.min(i + 2 + fpLen, rest.length))
    return { kind: "loadOption", enabled: (attributes & 1) === 1, description, devicePath: decodeDevicePath(path) }
  }
  return { kind: "raw" }
}

const variable = (r: Reader, type: number): EventData => {
  const variableName = guid(r, "UEFI_VARIABLE_DATA.VariableName")
  const nameLen = length64(r, "UEFI_VARIABLE_DATA.UnicodeNameLength", 2)
  const dataLen = length64(r, "UEFI_VARIABLE_DATA.VariableDataLength", 1)
  const unicodeName = utf16le(r.bytes(nameLen * 2, "UEFI_VARIABLE_DATA.UnicodeName"))
  const dataStart = r.offset
  const variableData = r.bytes(dataLen, "UEFI_VARIABLE_DATA.VariableData")
  r.offset = dataStart
  const value = variableValue(r, type, unicodeName, dataLen)
  r.offset = dataStart + dataLen
  return { kind: "variable", variableName, unicodeName, variableData, value }
}

const imageLoad = (r: Reader): EventData => {
  const imageLocation = u64(r, "UEFI_IMAGE_LOAD_EVENT.ImageLocationInMemory")
  const imageLength = u64(r, "UEFI_IMAGE_LOAD_EVENT.ImageLengthInMemory")
  const linkTimeAddress = u64(r, "UEFI_IMAGE_LOAD_EVENT.ImageLinkTimeAddress")
  const pathLen = length64(r, "UEFI_IMAGE_LOAD_EVENT.LengthOfDevicePath", 1)
  const devicePath = decodeDevicePath(r.bytes(pathLen, "UEFI_IMAGE_LOAD_EVENT.DevicePath"))
  return { kind: "imageLoad", imageLocation, imageLength, linkTimeAddress, devicePath }
}

const gpt = (r: Reader): EventData => {
  const headerAt = r.offset
  const sig = r.bytes(8, "UEFI_GPT_DATA.Header.Signature")
  if (toHex(sig) !== "4546492050415254") r.fail("not 'EFI PART'", "UEFI_GPT_DATA.Header.Signature", headerAt)
  r.u32le("UEFI_GPT_DATA.Header.Revision")
  r.u32le("UEFI_GPT_DATA.Header.HeaderSize")
  r.bytes(8 + 32, "UEFI_GPT_DATA.Header")
  const diskGuid = guid(r, "UEFI_GPT_DATA.Header.DiskGUID")
  r.bytes(8 + 4, "UEFI_GPT_DATA.Header")
  const entrySize = r.u32le("UEFI_GPT_DATA.Header.SizeOfPartitionEntry")
  r.u32le("UEFI_GPT_DATA.Header.PartitionEntryArrayCRC32")
  const count = length64(r, "UEFI_GPT_DATA.NumberOfPartitions", Math.max(entrySize, 1))
  if (entrySize < 128) r.fail(`SizeOfPartitionEntry ${entrySize} is below 128`, "UEFI_GPT_DATA.Header.SizeOfPartitionEntry", headerAt + 84)
  const partitions: Array<GptPartition> = []
  for (let i = 0; i < count; i++) {
    const e = r.offset
    const typeGuid = guid(r, "UEFI_GPT_DATA.Partitions.PartitionTypeGUID")
    const uniqueGuid = guid(r, "UEFI_GPT_DATA.Partitions.UniquePartitionGUID")
    const startingLba = u64(r, "UEFI_GPT_DATA.Partitions.StartingLBA")
    const endingLba = u64(r, "UEFI_GPT_DATA.Partitions.EndingLBA")
    const attributes = u64(r, "UEFI_GPT_DATA.Partitions.Attributes")
    const name = utf16le(r.bytes(72, "UEFI_GPT_DATA.Partitions.PartitionName"))
    r.offset = e
    r.bytes(entrySize, "UEFI_GPT_DATA.Partitions")
    partitions.push({ typeGuid, uniqueGuid, startingLba, endingLba, attributes, name })
  }
  return { kind: "gpt", diskGuid, partitions }
}

const noAction = (r: Reader, size: number): EventData => {
  if (size < 16) return RAW
  const sig = eventString(r.bytes(16, "EV_NO_ACTION.Signature"))
  if (sig === "StartupLocality" && size >= 17) return { kind: "startupLocality", locality: r.u8("StartupLocality.Locality") }
  return { kind: "noAction", signature: sig }
}

/**
 * Decodes the body of one event. `r` is positioned at the body and bounded by its end.
 * Types not listed stay raw (their digest is all the policies use).
 */
export const decodeEventData = (r: Reader, type: number, size: number): EventData => {
  switch (type) {
    case EV.NO_ACTION:
      return noAction(r, size)
    case EV.EFI_VARIABLE_DRIVER_CONFIG:
    case EV.EFI_VARIABLE_BOOT:
    case EV.EFI_VARIABLE_BOOT2:
    case EV.EFI_VARIABLE_AUTHORITY:
      return variable(r, type)
    case EV.EFI_BOOT_SERVICES_APPLICATION:
    case EV.EFI_BOOT_SERVICES_DRIVER:
    case EV.EFI_RUNTIME_SERVICES_DRIVER:
      return imageLoad(r)
    case EV.EFI_GPT_EVENT:
      return gpt(r)
    case EV.EFI_PLATFORM_FIRMWARE_BLOB:
      return { kind: "firmwareBlob", base: u64(r, "UEFI_PLATFORM_FIRMWARE_BLOB.BlobBase"), length: u64(r, "UEFI_PLATFORM_FIRMWARE_BLOB.BlobLength") }
    case EV.EFI_PLATFORM_FIRMWARE_BLOB2: {
      const n = r.u8("UEFI_PLATFORM_FIRMWARE_BLOB2.BlobDescriptionSize")
      const description = eventString(r.bytes(n, "UEFI_PLATFORM_FIRMWARE_BLOB2.BlobDescription"))
      return { kind: "firmwareBlob", description, base: u64(r, "UEFI_PLATFORM_FIRMWARE_BLOB2.BlobBase"), length: u64(r, "UEFI_PLATFORM_FIRMWARE_BLOB2.BlobLength") }
    }
    case EV.S_CRTM_VERSION:
      return { kind: "string", text: utf16le(r.bytes(size, "EV_S_CRTM_VERSION")) }
    case EV.IPL:
    case EV.EFI_ACTION:
    case EV.ACTION:
      return { kind: "string", text: eventString(r.bytes(size, "event string")) }
    case EV.SEPARATOR:
      return size === 4 ? { kind: "separator", value: r.u32le("EV_SEPARATOR") } : RAW
    default:
      return RAW
  }
}
