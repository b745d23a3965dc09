/**
 * Minimal zip reader for Keylime payloads (`extract_payload_zip`): central directory, stored and
 * deflated entries, no encryption, no zip64. Names that would escape the target dir are refused.
 */
import { inflateRawSync } from "node:zlib"
import { Either } from "effect"
import { AgentRequestError } from "./errors.js"

export interface ZipEntry {
  readonly name: string
  readonly data: Uint8Array
}

const fail = (message: string) => new AgentRequestError({ status: 500, message: `payload zip: ${message}` })

const CRC_TABLE = (() => {
  const t = new Uint32Array(256)
  for (let n = 0; n < 256; n++) {
    let c = n
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
    t[n] = c >>> 0
  }
  return t
})()

const crc32 = (b: Uint8Array): number => {
  let c = 0xffffffff
  for (let i = 0; i < b.length; i++) c = CRC_TABLE[(c ^ b[i]!) & 0xff]! ^ (c >>> 8)
  return (c ^ 0xffffffff) >>> 0
}

export const isZip = (b: Uint8Array): boolean => b.length >= 4 && b[0] === 0x50 && b[1] === 0x4b && b[2] === 3 && b[3] === 4

export const readZip = (bytes: Uint8Array): Either.Either<Array<ZipEntry>, AgentRequestError> =>
  Either.try({
    try: () => {
      const b = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
      let eocd = -1
      for (let i = b.length - 22; i >= Math.max(0, b.length - 22 - 65535); i--) {
        if (b.readUInt32LE(i) === 0x06054b50) {
          eocd = i
          break
        }
      }
      if (eocd < 0) throw fail("no end of central directory")
      const count = b.readUInt16LE(eocd + 10)
      let at = b.readUInt32LE(eocd + 16)
      const out: Array<ZipEntry> = []
      for (let n = 0; n < count; n++) {
        if (b.readUInt32LE(at) !== 0x02014b50) throw fail(`bad central directory entry ${n}`)
        const method = b.readUInt16LE(at + 10)
        const crc = b.readUInt32LE(at + 16)
        const compressed = b.readUInt32LE(at + 20)
        const nameLen = b.readUInt16LE(at + 28)
        const extraLen = b.readUInt16LE(at + 30)
        const commentLen = b.readUInt16LE(at + 32)
        const local = b.readUInt32LE(at + 42)
        const name = b.subarray(at + 46, at + 46 + nameLen).toString("utf8")
        at += 46 + nameLen + extraLen + commentLen
        if (name.startsWith("/") || name.split(/[\\/]/).includes("..")) throw fail(`entry name escapes the directory: ${name}`)
        if (b.readUInt32LE(local) !== 0x04034b50) throw fail(`bad local header for ${name}`)
        const localName = b.subarray(local + 30, local + 30 + b.readUInt16LE(local + 26)).toString("utf8")
        if (localName !== name) throw fail(`local header names ${localName}, central directory ${name}`)
        const start = local + 30 + b.readUInt16LE(local + 26) + b.readUInt16LE(local + 28)
        const raw = b.subarray(start, start + compressed)
        if (raw.length !== compressed) throw fail(`truncated entry ${name}`)
        if (name.endsWith("/")) continue
        const data = method === 0 ? raw : method === 8 ? inflateRawSync(raw) : undefined
        if (data === undefined) throw fail(`unsupported compression method ${method} for ${name}`)
        if (crc32(data) !== crc) throw fail(`CRC mismatch for ${name}`)
        out.push({ name, data: new Uint8Array(data) })
      }
      return out
    },
    catch: (e) => (e instanceof AgentRequestError ? e : fail(e instanceof Error ? e.message : String(e)))
  })
