/**
 * The boot of a simulated machine as a TCG2 crypto-agile event log: `simulatedBootEvents` is a
 * plausible UEFI + shim + grub boot (PCRs 0–9); `encodeEventLog` digests each event per bank and
 * writes the log with the boot engine's encoder (Spec ID header, then TCG_PCR_EVENT2 records).
 */
import { createHash } from "node:crypto"
import { encodeEventLog as encodeBootLog } from "../../boot/encode.js"
import type { HashAlg } from "../../tpm/Tpm.js"

export const EV = {
  POST_CODE: 0x1,
  NO_ACTION: 0x3,
  SEPARATOR: 0x4,
  S_CRTM_VERSION: 0x8,
  IPL: 0xd,
  EFI_VARIABLE_DRIVER_CONFIG: 0x80000001,
  EFI_VARIABLE_BOOT: 0x80000002,
  EFI_BOOT_SERVICES_APPLICATION: 0x80000003,
  EFI_ACTION: 0x80000007,
  EFI_PLATFORM_FIRMWARE_BLOB: 0x80000008,
  EFI_VARIABLE_AUTHORITY: 0x800000e0
} as const

export interface BootEvent {
  readonly pcr: number
  readonly type: number
  /** The event data stored in the log. */
  readonly data: Uint8Array
  /** What the digest is taken over when it differs from `data` (e.g. a PE image for an application). */
  readonly measured?: Uint8Array
}

export interface EncodedLog {
  readonly log: Uint8Array
  /** Per event, the digest of each bank, in event order: what gets extended into the TPM. */
  readonly extends: ReadonlyArray<{ readonly pcr: number; readonly digests: ReadonlyArray<{ hash: HashAlg; digest: Uint8Array }> }>
}

const u16 = (n: number): Buffer => {
  const b = Buffer.alloc(2)
  b.writeUInt16LE(n)
  return b
}
const u64 = (n: number | bigint): Buffer => {
  const b = Buffer.alloc(8)
  b.writeBigUInt64LE(BigInt(n))
  return b
}

/** Digests every event in every bank and writes the log with the boot engine's encoder. */
export const encodeEventLog = (events: ReadonlyArray<BootEvent>, banks: ReadonlyArray<HashAlg>): EncodedLog => {
  const extended = events.map((e) => ({
    pcr: e.pcr,
    digests: banks.map((hash) => ({ hash, digest: new Uint8Array(createHash(hash).update(e.measured ?? e.data).digest()) }))
  }))
  const log = encodeBootLog(
    banks,
    events.map((e, i) => ({ pcr: e.pcr, type: e.type, data: e.data, digests: extended[i]!.digests.map((d) => d.digest) }))
  )
  return { log, extends: extended }
}

const utf16 = (s: string): Buffer => Buffer.from(s, "utf16le")

const guid = (text: string): Buffer => {
  // mixed-endian EFI_GUID layout
  const h = text.replace(/-/g, "")
  const b = Buffer.from(h, "hex")
  return Buffer.concat([Buffer.from(b.subarray(0, 4)).reverse(), Buffer.from(b.subarray(4, 6)).reverse(), Buffer.from(b.subarray(6, 8)).reverse(), b.subarray(8)])
}
const EFI_GLOBAL_VARIABLE = guid("8be4df61-93ca-11d2-aa0d-00e098032b8c")
const EFI_IMAGE_SECURITY_DATABASE = guid("d719b2cb-3d3a-4596-a3bc-dad00e67656f")

/** UEFI_VARIABLE_DATA: VariableName GUID, name length, data length, UTF-16 name, data. */
const variableData = (vendor: Buffer, name: string, data: Uint8Array): Uint8Array =>
  new Uint8Array(Buffer.concat([vendor, u64(name.length), u64(data.length), utf16(name), Buffer.from(data)]))

/** A media file-path device path node, then the end node. */
const filePath = (path: string): Buffer =>
  Buffer.concat([Buffer.from([4, 4]), u16(4 + utf16(path + "\0").length), utf16(path + "\0"), Buffer.from([0x7f, 0xff, 4, 0])])

/** UEFI_IMAGE_LOAD_EVENT with a small device path naming the file. */
const imageLoad = (path: string, length: number): Uint8Array => {
  const devicePath = filePath(path)
  return new Uint8Array(Buffer.concat([u64(0x7c000000), u64(length), u64(0), u64(devicePath.length), devicePath]))
}

const ascii = (s: string): Uint8Array => new Uint8Array(Buffer.from(s, "ascii"))

const u32 = (n: number): Buffer => {
  const b = Buffer.alloc(4)
  b.writeUInt32LE(n)
  return b
}
const EFI_CERT_SHA256 = guid("c1c41626-504c-4092-aca9-41f936934328")
const OWNER = guid("77fa9abd-0359-4d32-bd60-28f4e78f784b")
const EFI_CERT_X509 = guid("a5c059a1-94e4-4aa7-87b5-ab155c2bf072")
const sha256 = (s: string) => createHash("sha256").update(s).digest()

/** An EFI_SIGNATURE_LIST of SHA-256 entries (what dbx holds; simple stand-ins for PK/KEK/db certificates). */
const signatureList = (labels: ReadonlyArray<string>): Uint8Array => {
  const size = 16 + 32
  return new Uint8Array(Buffer.concat([
    EFI_CERT_SHA256,
    u32(28 + labels.length * size),
    u32(0),
    u32(size),
    ...labels.map((l) => Buffer.concat([OWNER, sha256(l)]))
  ]))
}

/**
 * An EFI_SIGNATURE_LIST of one certificate (PK and KEK hold X.509 certificates on real machines, and
 * the `example` measured-boot policy requires that type there). The "certificate" is a stand-in
 * byte string: nothing parses it as DER, the policies compare it byte for byte.
 */
const certificateList = (label: string): Uint8Array => {
  const cert = ascii(`simulated X.509 certificate: ${label}`)
  const size = 16 + cert.length
  return new Uint8Array(Buffer.concat([EFI_CERT_X509, u32(28 + size), u32(0), u32(size), OWNER, cert]))
}

/** EFI_LOAD_OPTION: attributes (active), device path length, description, device path. */
const loadOption = (description: string, path: string): Uint8Array => {
  const devicePath = filePath(path)
  return new Uint8Array(Buffer.concat([u32(1), u16(devicePath.length), utf16(description + "\0"), devicePath]))
}

/** A simulated machine's boot, PCRs 0–9; `name` makes kernel command lines (and so PCR 8) differ per machine. */
export const simulatedBootEvents = (name: string): ReadonlyArray<BootEvent> => {
  const image = (file: string) => ascii(`simulated PE image ${file}`)
  const separator = (pcr: number): BootEvent => ({ pcr, type: EV.SEPARATOR, data: new Uint8Array(4) })
  const cmdline = `linux /vmlinuz-6.1.0-attest root=/dev/vda1 ro quiet attest.machine=${name}`
  return [
    { pcr: 0, type: EV.S_CRTM_VERSION, data: new Uint8Array(utf16("1.0 attest simulated firmware\0")) },
    {
      pcr: 0,
      type: EV.EFI_PLATFORM_FIRMWARE_BLOB,
      data: new Uint8Array(Buffer.concat([u64(0xffc00000), u64(0x400000)])),
      measured: ascii("simulated firmware volume")
    },
    { pcr: 7, type: EV.EFI_VARIABLE_DRIVER_CONFIG, data: variableData(EFI_GLOBAL_VARIABLE, "SecureBoot", new Uint8Array([1])) },
    { pcr: 7, type: EV.EFI_VARIABLE_DRIVER_CONFIG, data: variableData(EFI_GLOBAL_VARIABLE, "PK", certificateList("simulated PK")) },
    { pcr: 7, type: EV.EFI_VARIABLE_DRIVER_CONFIG, data: variableData(EFI_GLOBAL_VARIABLE, "KEK", certificateList("simulated KEK")) },
    { pcr: 7, type: EV.EFI_VARIABLE_DRIVER_CONFIG, data: variableData(EFI_IMAGE_SECURITY_DATABASE, "db", signatureList(["simulated db CA"])) },
    { pcr: 7, type: EV.EFI_VARIABLE_DRIVER_CONFIG, data: variableData(EFI_IMAGE_SECURITY_DATABASE, "dbx", signatureList(["revoked image 1", "revoked image 2"])) },
    { pcr: 1, type: EV.EFI_VARIABLE_BOOT, data: variableData(EFI_GLOBAL_VARIABLE, "BootOrder", new Uint8Array([1, 0])) },
    { pcr: 1, type: EV.EFI_VARIABLE_BOOT, data: variableData(EFI_GLOBAL_VARIABLE, "Boot0001", loadOption("debian", "\\EFI\\debian\\shimx64.efi")) },
    { pcr: 4, type: EV.EFI_ACTION, data: ascii("Calling EFI Application from Boot Option") },
    ...[0, 1, 2, 3, 4, 5, 6, 7].map(separator),
    { pcr: 7, type: EV.EFI_VARIABLE_AUTHORITY, data: variableData(EFI_IMAGE_SECURITY_DATABASE, "db", new Uint8Array(Buffer.concat([OWNER, sha256("simulated db CA")]))) },
    { pcr: 4, type: EV.EFI_BOOT_SERVICES_APPLICATION, data: imageLoad("\\EFI\\debian\\shimx64.efi", 950000), measured: image("shimx64.efi") },
    { pcr: 4, type: EV.EFI_BOOT_SERVICES_APPLICATION, data: imageLoad("\\EFI\\debian\\grubx64.efi", 2500000), measured: image("grubx64.efi") },
    { pcr: 8, type: EV.IPL, data: ascii(`grub_cmd: ${cmdline}\0`) },
    { pcr: 9, type: EV.IPL, data: ascii("/vmlinuz-6.1.0-attest\0"), measured: image("vmlinuz-6.1.0-attest") },
    { pcr: 9, type: EV.IPL, data: ascii("/initrd.img-6.1.0-attest\0"), measured: image("initrd.img-6.1.0-attest") },
    { pcr: 8, type: EV.IPL, data: ascii(`kernel_cmdline: ${cmdline.slice(6)}\0`) },
    { pcr: 4, type: EV.EFI_BOOT_SERVICES_APPLICATION, data: imageLoad("/vmlinuz-6.1.0-attest", 8000000), measured: image("vmlinuz-6.1.0-attest") },
    { pcr: 5, type: EV.EFI_ACTION, data: ascii("Exit Boot Services Invocation") },
    { pcr: 5, type: EV.EFI_ACTION, data: ascii("Exit Boot Services Returned with Success") }
  ]
}
