/**
 * A zip archive writer for certificate packages (the agent's reader, src/agent/zip.ts, and
 * Python's zipfile read them), with fflate: deflated entries, or stored ones where deflate does not
 * shrink them (as zip tools do), UTF-8 names, regular files readable by their owner only.
 * Pure; the modification time is an argument so equal input gives equal bytes.
 */
import { deflateSync, type Zippable, zipSync } from "fflate"

export interface ZipInput {
  readonly name: string
  readonly data: Uint8Array
}

/**
 * fflate writes the MS-DOS time fields from a Date's local-time getters: this Date's local time
 * reads as `d`'s UTC time, so the bytes do not depend on the time zone (the format has none).
 */
const asLocal = (d: Date): Date => {
  const t = new Date(Math.max(d.getTime(), Date.UTC(1980, 0, 1)))
  return new Date(t.getUTCFullYear(), t.getUTCMonth(), t.getUTCDate(), t.getUTCHours(), t.getUTCMinutes(), t.getUTCSeconds())
}

export const writeZip = (entries: ReadonlyArray<ZipInput>, modified: Date): Uint8Array => {
  const mtime = asLocal(modified)
  const files: Zippable = {}
  for (const e of entries) {
    // a file that does not shrink is stored as it is (level 0), as zip tools do
    const stored = deflateSync(e.data).length >= e.data.length
    files[e.name] = [e.data, { level: stored ? 0 : 6, mtime, os: 3, attrs: (0o100600 << 16) >>> 0 }]
  }
  return zipSync(files)
}
