/**
 * The writing side of the ima-ng template (tpm-facts.md §4.2; ima-sig when a file signature is
 * given: a third field, u32 length ‖ signature), for anything that produces a list:
 * the agent's simulated machine, test and benchmark generators. Template data is
 * d-ng ‖ n-ng, each a u32 little-endian length followed by `"<alg>:\0" ‖ digest` and `path ‖ \0`;
 * the template hash of a bank is H_bank(template data); an ASCII line shows one bank's hash
 * (sha1 in `ascii_runtime_measurements`, sha256 in `ascii_runtime_measurements_sha256`).
 * The parser in entry.ts rebuilds the same bytes from a line; the tests hold the two together.
 */
import { utf8Bytes } from "../crypto/encoding.js"
import { type HashAlg, hashBytes, toHex } from "./hash.js"

/** ima-ng template data for a file digest and path (ima-sig with a signature). */
export const imaNgTemplateData = (digestAlg: string, fileDigest: Uint8Array, path: string, signature?: Uint8Array): Uint8Array => {
  const algo = utf8Bytes(`${digestAlg}:\0`)
  const name = utf8Bytes(`${path}\0`)
  const sigLength = signature === undefined ? 0 : 4 + signature.length
  const out = new Uint8Array(4 + algo.length + fileDigest.length + 4 + name.length + sigLength)
  const view = new DataView(out.buffer)
  view.setUint32(0, algo.length + fileDigest.length, true)
  out.set(algo, 4)
  out.set(fileDigest, 4 + algo.length)
  const nameAt = 4 + algo.length + fileDigest.length
  view.setUint32(nameAt, name.length, true)
  out.set(name, nameAt + 4)
  if (signature !== undefined) {
    const sigAt = nameAt + 4 + name.length
    view.setUint32(sigAt, signature.length, true)
    out.set(signature, sigAt + 4)
  }
  return out
}

/** The template hash of one bank: what the kernel extends into PCR 10. */
export const templateHash = (bank: HashAlg, templateData: Uint8Array): Uint8Array => hashBytes(bank, templateData)

/** One line of an ASCII measurement list for an ima-ng entry, given the hash its column shows. */
export const imaNgLine = (columnHash: Uint8Array, digestAlg: string, fileDigest: Uint8Array, path: string, pcr = 10): string =>
  `${pcr} ${toHex(columnHash)} ima-ng ${digestAlg}:${toHex(fileDigest)} ${path}`

export interface ImaNgEncodeOptions {
  /** File digest algorithm named in d-ng. Default sha256. */
  readonly digestAlg?: string
  /** Banks to compute template hashes for (PCR 10 extends). Default sha1 and sha256. */
  readonly banks?: ReadonlyArray<HashAlg>
  /** Bank whose template hash the line shows; computed even when not in `banks`. Default sha1. */
  readonly column?: HashAlg
  readonly pcr?: number
  /** The file's signature (evmctl's signature_v2_hdr): the entry is ima-sig. */
  readonly signature?: Uint8Array
}

export interface ImaNgEncoded {
  readonly line: string
  readonly templateData: Uint8Array
  /** Template hash per requested bank, in `banks` order (the shape of a PCR extend). */
  readonly templateHashes: ReadonlyArray<{ readonly hash: HashAlg; readonly digest: Uint8Array }>
}

/** An ima-ng entry as the kernel would record it: template data, its hash per bank and its ASCII line. */
export const encodeImaNg = (fileDigest: Uint8Array, path: string, options: ImaNgEncodeOptions = {}): ImaNgEncoded => {
  const digestAlg = options.digestAlg ?? "sha256"
  const banks = options.banks ?? ["sha1", "sha256"]
  const column = options.column ?? "sha1"
  const templateData = imaNgTemplateData(digestAlg, fileDigest, path, options.signature)
  const templateHashes = banks.map((hash) => ({ hash, digest: templateHash(hash, templateData) }))
  const shown = templateHashes.find((t) => t.hash === column)?.digest ?? templateHash(column, templateData)
  const ng = imaNgLine(shown, digestAlg, fileDigest, path, options.pcr)
  const line = options.signature === undefined ? ng : `${ng.replace(" ima-ng ", " ima-sig ")} ${toHex(options.signature)}`
  return { line, templateData, templateHashes }
}
