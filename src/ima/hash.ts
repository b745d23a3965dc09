/** The hash-algorithm helpers IMA needs, one-shot digests through the crypto port, and hex helpers. */
import { cryptoPort } from "../crypto/active.js"
import { hexBytes, toHex as hexOf } from "../crypto/encoding.js"
import { digestSize, type HashAlg } from "../tpm/hashAlg.js"

export type { HashAlg } from "../tpm/hashAlg.js"
export { digestSize } from "../tpm/hashAlg.js"

export const hashBytes = (alg: HashAlg, data: Uint8Array): Uint8Array => cryptoPort().digest(alg, data)

/**
 * The digest as a latin1 string (one char per byte). For the IMA loop: a one-shot hash returning a
 * string costs less than half of one returning bytes, whose ArrayBuffer the GC must also reclaim.
 */
export const hashLatin1 = (alg: HashAlg, data: Uint8Array): string => cryptoPort().digestLatin1(alg, data)

/** Template-hash algorithm from the hex length of the list's column 2. */
export const hashAlgFromHexLength = (n: number): HashAlg | undefined =>
  n === 40 ? "sha1" : n === 64 ? "sha256" : n === 96 ? "sha384" : n === 128 ? "sha512" : undefined

export const zeros = (alg: HashAlg): Uint8Array => new Uint8Array(digestSize(alg))
export const ones = (alg: HashAlg): Uint8Array => new Uint8Array(digestSize(alg)).fill(0xff)

const HEX = /^(?:[0-9a-fA-F]{2})*$/
export const isHex = (s: string): boolean => HEX.test(s)

export const toHex = (b: Uint8Array): string => hexOf(b)

/** Strict hex → bytes; undefined on odd length or a non-hex character. */
export const fromHex = (s: string): Uint8Array | undefined => (isHex(s) ? hexBytes(s) : undefined)
