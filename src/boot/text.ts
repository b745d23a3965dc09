/** Small text codecs for UEFI data: GUIDs (mixed-endian), UTF-16LE and hex. */

const hexByte: Array<string> = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"))

export const toHex = (b: Uint8Array): string => {
  let s = ""
  for (let i = 0; i < b.length; i++) s += hexByte[b[i]!]
  return s
}

/** EFI_GUID as text: Data1 (u32le), Data2, Data3 (u16le), Data4 (8 bytes in order). `b` must hold 16 bytes. */
export const guidToString = (b: Uint8Array): string => {
  const h = (i: number) => hexByte[b[i]!]!
  return (
    h(3) + h(2) + h(1) + h(0) + "-" + h(5) + h(4) + "-" + h(7) + h(6) + "-" + h(8) + h(9) + "-" +
    h(10) + h(11) + h(12) + h(13) + h(14) + h(15)
  )
}

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
