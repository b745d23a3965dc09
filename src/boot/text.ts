/** Small text codecs for UEFI data: GUIDs (mixed-endian), UTF-16LE and hex. */

const hexByte: Array<string> = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"))

/** Lowercase hex (Buffer's encoder on node: an order of magnitude faster than string concatenation for certificates). */
export { toHex } from "../crypto/encoding.js"

/** EFI_GUID as text: Data1 (u32le), Data2, Data3 (u16le), Data4 (8 bytes in order). `b` must hold 16 bytes. */
export const guidToString = (b: Uint8Array): string =>
  hexByte[b[3]!]! + hexByte[b[2]!]! + hexByte[b[1]!]! + hexByte[b[0]!]! + "-" + hexByte[b[5]!]! + hexByte[b[4]!]! + "-" +
  hexByte[b[7]!]! + hexByte[b[6]!]! + "-" + hexByte[b[8]!]! + hexByte[b[9]!]! + "-" + hexByte[b[10]!]! + hexByte[b[11]!]! +
  hexByte[b[12]!]! + hexByte[b[13]!]! + hexByte[b[14]!]! + hexByte[b[15]!]!

/** UTF-16LE code units to a string, stopping at the first NUL. Odd trailing byte is ignored. */
export const utf16le = (b: Uint8Array): string => {
  let s = ""
  for (let i = 0; i + 1 < b.length; i += 2) {
    const c = b[i]! | (b[i + 1]! << 8)
    if (c === 0) break
    s += String.fromCharCode(c)
  }
  return s
}

const latin = new TextDecoder("utf-8", { fatal: false })

/** Event strings (EV_IPL, EV_EFI_ACTION): UTF-8 without trailing NULs; UTF-16LE when every other byte is 0. */
export const eventString = (b: Uint8Array): string => {
  let end = b.length
  if (end >= 4 && end % 2 === 0 && b[1] === 0 && b[3] === 0 && b[0] !== 0) return utf16le(b)
  while (end > 0 && b[end - 1] === 0) end--
  return latin.decode(b.subarray(0, end))
}
