/**
 * ima-ng template data and ascii lines (tpm-facts.md §4.2): d-ng = "<algo>:\0" ‖ digest, n-ng =
 * path ‖ \0, each prefixed by its u32 little-endian length; the template hash of a bank is
 * H_bank(template data) and the ascii list shows the sha1 one.
 */
import { createHash } from "node:crypto"

export const imaNgTemplateData = (fileDigestAlg: string, fileDigest: Uint8Array, path: string): Uint8Array => {
  const algo = Buffer.from(`${fileDigestAlg}:\0`, "ascii")
  const name = Buffer.from(`${path}\0`, "utf8")
  const out = Buffer.alloc(4 + algo.length + fileDigest.length + 4 + name.length)
  let at = out.writeUInt32LE(algo.length + fileDigest.length, 0)
  at += algo.copy(out, at)
  at += Buffer.from(fileDigest).copy(out, at)
  at = out.writeUInt32LE(name.length, at)
  name.copy(out, at)
  return new Uint8Array(out)
}

export interface ImaEntry {
  readonly line: string
  readonly sha1: Uint8Array
  readonly sha256: Uint8Array
}

/** One `ascii_runtime_measurements` line for PCR 10 and the template hash of each bank. */
export const imaNgEntry = (fileDigest: Uint8Array, path: string): ImaEntry => {
  const data = imaNgTemplateData("sha256", fileDigest, path)
  const sha1 = new Uint8Array(createHash("sha1").update(data).digest())
  const sha256 = new Uint8Array(createHash("sha256").update(data).digest())
  return {
    line: `10 ${Buffer.from(sha1).toString("hex")} ima-ng sha256:${Buffer.from(fileDigest).toString("hex")} ${path}`,
    sha1,
    sha256
  }
}
