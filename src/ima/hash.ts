/** One-shot hashing over node:crypto, the hash-algorithm helpers IMA needs, and hex helpers. */
import * as crypto from "node:crypto"
import { digestSize, type HashAlg } from "../tpm/hashAlg.js"

export type { HashAlg } from "../tpm/hashAlg.js"
export { digestSize } from "../tpm/hashAlg.js"

// crypto.hash (Node ≥ 20.12) skips the Hash object: measurably cheaper for ~100-byte inputs.
const nodeHash = (crypto as { hash?: unknown }).hash as ((a: string, d: Uint8Array, o: "buffer") => Buffer) | undefined
const oneShot: ((alg: string, data: Uint8Array) => Buffer) | undefined =
  nodeHash === undefined ? undefined : (alg, data) => nodeHash(alg, data, "buffer")

export const hashBytes: (alg: string, data: Uint8Array) => Buffer =
  oneShot ?? ((alg, data) => crypto.createHash(alg).update(data).digest())

/**
 * The digest as a latin1 string (one char per byte). For the IMA loop: a one-shot hash returning a
 * string costs less than half of one returning a Buffer, whose ArrayBuffer the GC must also reclaim.
 */
const nodeHashLatin1 = nodeHash as ((a: string, d: Uint8Array, o: "latin1") => string) | undefined
export const hashLatin1: (alg: string, data: Uint8Array) => string =
  nodeHashLatin1 === undefined
    ? (alg, data) => crypto.createHash(alg).update(data).digest("binary")
    : (alg, data) => nodeHashLatin1(alg, data, "latin1")

/** Template-hash algorithm from the hex length of the list's column 2. */
export const hashAlgFromHexLength = (n: number): HashAlg | undefined =>
  n === 40 ? "sha1" : n === 64 ? "sha256" : n === 96 ? "sha384" : n === 128 ? "sha512" : undefined

export const zeros = (alg: HashAlg): Buffer => Buffer.alloc(digestSize(alg))
export const ones = (alg: HashAlg): Buffer => Buffer.alloc(digestSize(alg), 0xff)

const HEX = /^(?:[0-9a-fA-F]{2})*$/
export const isHex = (s: string): boolean => HEX.test(s)

export const toHex = (b: Uint8Array): string => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString("hex")

/** Strict hex → bytes; undefined on odd length or a non-hex character. */
export const fromHex = (s: string): Uint8Array | undefined => (isHex(s) ? new Uint8Array(Buffer.from(s, "hex")) : undefined)
