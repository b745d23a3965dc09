/**
 * The zip reader for Keylime payloads (`extract_payload_zip`), with fflate: its directory walk and
 * inflate (no zip64, as Keylime payloads never are). fflate checks no CRC-32 and reads each entry's data through the
 * local header without comparing it with the central directory, so attest checks both: every
 * entry's CRC-32 (fflate's) against the central directory's, and the local header's name against
 * the central one. Names that would escape the target dir are refused; directories are skipped.
 */
import { Either } from "effect"
import { unzipSync, type UnzipFileInfo, ZipPassThrough } from "fflate"
import { AgentRequestError } from "./errors.js"

export interface ZipEntry {
  readonly name: string
  readonly data: Uint8Array
}

const fail = (message: string) => new AgentRequestError({ status: 500, message: `payload zip: ${message}` })

export const isZip = (b: Uint8Array): boolean => b.length >= 4 && b[0] === 0x50 && b[1] === 0x4b && b[2] === 3 && b[3] === 4

/** fflate's CRC-32 of the data. */
const crc32 = (data: Uint8Array): number => {
  const z = new ZipPassThrough("")
  z.ondata = () => undefined
  z.push(data, true)
  return z.crc >>> 0
}

interface Checked {
  readonly crc: number
  readonly localNameMatches: boolean
}

/**
 * Per central directory entry, in order: its CRC-32, and whether the local header it points at
 * carries the same name bytes. Every read is bounds-checked; zip64 archives are refused (a
 * Keylime payload is never one).
 */
const centralChecks = (b: Uint8Array, count: number): ReadonlyArray<Checked> => {
  const v = new DataView(b.buffer, b.byteOffset, b.byteLength)
  const u16 = (at: number): number => {
    if (at < 0 || at + 2 > b.length) throw fail(`a header at ${at} runs past the end`)
    return v.getUint16(at, true)
  }
  const u32 = (at: number): number => {
    if (at < 0 || at + 4 > b.length) throw fail(`a header at ${at} runs past the end`)
    return v.getUint32(at, true)
  }
  let eocd = b.length - 22
  while (eocd >= 0 && u32(eocd) !== 0x06054b50) eocd--
  if (eocd < 0) throw fail("no end of central directory")
  let at = u32(eocd + 16)
  if (at === 0xffffffff) throw fail("zip64 archives are not supported")
  const out: Array<Checked> = []
  for (let n = 0; n < count; n++) {
    if (u32(at) !== 0x02014b50) throw fail(`bad central directory entry ${n}`)
    const nameLen = u16(at + 28)
    const local = u32(at + 42)
    if (u32(local) !== 0x04034b50) throw fail(`bad local header for entry ${n}`)
    const central = b.subarray(at + 46, at + 46 + nameLen)
    const localName = b.subarray(local + 30, local + 30 + u16(local + 26))
    out.push({ crc: u32(at + 16), localNameMatches: localName.length === central.length && localName.every((c, i) => c === central[i]) })
    at += 46 + nameLen + u16(at + 30) + u16(at + 32)
  }
  return out
}

export const readZip = (bytes: Uint8Array): Either.Either<Array<ZipEntry>, AgentRequestError> =>
  Either.try({
    try: () => {
      const order: Array<UnzipFileInfo> = []
      const files = unzipSync(bytes, {
        filter: (f) => {
          if (f.name.startsWith("/") || f.name.split(/[\\/]/).includes("..")) throw fail(`entry name escapes the directory: ${f.name}`)
          if (f.compression !== 0 && f.compression !== 8) throw fail(`unsupported compression method ${f.compression} for ${f.name}`)
          order.push(f)
          return !f.name.endsWith("/")
        }
      })
      const checks = centralChecks(bytes, order.length)
      const out: Array<ZipEntry> = []
      order.forEach((f, i) => {
        if (!checks[i]!.localNameMatches) throw fail(`the local header of ${f.name} names another entry`)
        if (f.name.endsWith("/")) return
        const data = files[f.name]!
        if (data.length !== f.originalSize) throw fail(`${f.name} is ${data.length} bytes, its header says ${f.originalSize}`)
        if (crc32(data) !== checks[i]!.crc) throw fail(`CRC mismatch for ${f.name}`)
        out.push({ name: f.name, data })
      })
      return out
    },
    catch: (e) => (e instanceof AgentRequestError ? e : fail(e instanceof Error ? e.message : String(e)))
  })
