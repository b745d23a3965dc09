/**
 * The file digests an IMA list shows, as a runtime policy's `digests` map: what `attest policy
 * create runtime --ima-list` and `attest up` (a policy for each simulated machine) allow.
 */
import { toHex } from "../crypto/encoding.js"
import type { ImaEntry } from "./entry.js"

/** Adds `digest` to `path`'s list once. */
export const addDigest = (into: Record<string, Array<string>>, path: string, digest: string): void => {
  const list = (into[path] ??= [])
  if (!list.includes(digest)) list.push(digest)
}

/**
 * Every measured file's digest, by path. ima-buf entries (keys, kexec command lines) are policy
 * decisions, not measurements to copy; violations (all-zero digests) say nothing about the file.
 */
export const digestsFromImaList = (
  entries: ReadonlyArray<ImaEntry>,
  into: Record<string, Array<string>> = {}
): Record<string, Array<string>> => {
  for (const e of entries) {
    if (e.template === "ima-buf") continue
    const hex = toHex(e.digest)
    if (/^0+$/.test(hex) && e.name !== "boot_aggregate") continue
    addDigest(into, e.name, hex)
  }
  return into
}
