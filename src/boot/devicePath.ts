/**
 * UEFI device paths (UEFI spec §10.3), decoded enough to compare: file path and hard drive nodes in
 * full, the rest as efivar-style text. Never fails: a malformed path ends in a `Garbage(hex)` node,
 * as Keylime keeps the raw value when libefivar cannot format it.
 */
import { guidToString, toHex, utf16le } from "./text.js"

export type DevicePathNode =
  | { readonly kind: "file"; readonly path: string }
  | {
      readonly kind: "hardDrive"
      readonly partition: number
      readonly start: bigint
      readonly size: bigint
      /** GUID text for GPT, 0x-hex for MBR. */
      readonly signature: string
      readonly format: "GPT" | "MBR" | number
    }
  | { readonly kind: "fvFile"; readonly guid: string }
  | { readonly kind: "fv"; readonly guid: string }
  | { readonly kind: "other"; readonly text: string }

export interface DevicePath {
  readonly nodes: ReadonlyArray<DevicePathNode>
  /** efivar-like text: `PciRoot(0x0)/Pci(0x1,0x0)/HD(1,GPT,<guid>,0x800,0x100000)/File(\EFI\BOOT\BOOTX64.EFI)` */
  readonly text: string
}

const hx = (n: number | bigint) => `0x${n.toString(16)}`

const nodeText = (n: DevicePathNode): string => {
  switch (n.kind) {
    case "file":
      return `File(${n.path})`
    case "hardDrive":
      return `HD(${n.partition},${n.format},${n.signature},${hx(n.start)},${hx(n.size)})`
    case "fvFile":
      return `FvFile(${n.guid})`
    case "fv":
      return `FvVol(${n.guid})`
    case "other":
      return n.text
  }
}

const u32 = (b: Uint8Array, at: number) => (b[at]! | (b[at + 1]! << 8) | (b[at + 2]! << 16) | (b[at + 3]! << 24)) >>> 0
const u64 = (b: Uint8Array, at: number) => BigInt(u32(b, at)) | (BigInt(u32(b, at + 4)) << 32n)

const decodeNode = (type: number, sub: number, body: Uint8Array): DevicePathNode => {
  if (type === 4 && sub === 4) return { kind: "file", path: utf16le(body) }
  if (type === 4 && sub === 1 && body.length >= 38) {
    const fmt = body[36]!
    const sigType = body[37]!
    const sig = body.subarray(20, 36)
    return {
      kind: "hardDrive",
      partition: u32(body, 0),
      start: u64(body, 4),
      size: u64(body, 12),
      signature: sigType === 2 ? guidToString(sig) : hx(u32(sig, 0)),
      format: fmt === 2 ? "GPT" : fmt === 1 ? "MBR" : fmt
    }
  }
  if (type === 4 && sub === 6 && body.length >= 16) return { kind: "fvFile", guid: guidToString(body) }
  if (type === 4 && sub === 7 && body.length >= 16) return { kind: "fv", guid: guidToString(body) }
  if (type === 1 && sub === 1 && body.length >= 2) return { kind: "other", text: `Pci(${hx(body[1]!)},${hx(body[0]!)})` }
  if (type === 2 && sub === 1 && body.length >= 8) {
    const hid = u32(body, 0)
    const uid = u32(body, 4)
    // EISA PNP0A03/PNP0A08 are the PCI root bridges efivar names PciRoot.
    if (hid === 0x0a0341d0 || hid === 0x0a0841d0) return { kind: "other", text: `PciRoot(${hx(uid)})` }
    return { kind: "other", text: `Acpi(${hx(hid)},${hx(uid)})` }
  }
  if (type === 3 && sub === 2 && body.length >= 4) {
    return { kind: "other", text: `Scsi(${hx(body[0]! | (body[1]! << 8))},${hx(body[2]! | (body[3]! << 8))})` }
  }
  if (type === 3 && sub === 18 && body.length >= 6) {
    return { kind: "other", text: `Sata(${hx(body[0]! | (body[1]! << 8))},${hx(body[2]! | (body[3]! << 8))},${hx(body[4]! | (body[5]! << 8))})` }
  }
  if (type === 3 && sub === 23 && body.length >= 4) return { kind: "other", text: `NVMe(${hx(u32(body, 0))},${toHex(body.subarray(4))})` }
  if (type === 4 && sub === 3 && body.length >= 16) return { kind: "other", text: `VenMedia(${guidToString(body)})` }
  if (type === 1 && sub === 4 && body.length >= 16) return { kind: "other", text: `VenHw(${guidToString(body)})` }
  return { kind: "other", text: `Path(${type},${sub},${toHex(body)})` }
}

export const decodeDevicePath = (b: Uint8Array): DevicePath => {
  const nodes: Array<DevicePathNode> = []
  const parts: Array<string> = []
  let at = 0
  while (at + 4 <= b.length) {
    const type = b[at]!
    const sub = b[at + 1]!
    const len = b[at + 2]! | (b[at + 3]! << 8)
    if (len < 4 || at + len > b.length) break
    if (type === 0x7f && sub === 0xff) {
      at = b.length
      break
    }
    if (type === 0x7f && sub === 0x01) parts.push(",")
    else {
      const node = decodeNode(type, sub, b.subarray(at + 4, at + len))
      nodes.push(node)
      parts.push(nodeText(node))
    }
    at += len
  }
  if (at < b.length) {
    const node: DevicePathNode = { kind: "other", text: `Garbage(${toHex(b.subarray(at))})` }
    nodes.push(node)
    parts.push(node.text)
  }
  return { nodes, text: parts.join("/").replace(/\/,\//g, ",") }
}
