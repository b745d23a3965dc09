/**
 * The crypto port: everything the verification engines (src/tpm's checks, src/ima, src/boot, the
 * evaluator, src/tee, EAR) need from a crypto library, and nothing else. Two implementations:
 * `nodeCrypto` (node:crypto, the default wherever it exists: the hot paths keep their measured speed)
 * and `portableCrypto` (@noble/hashes, @noble/curves and WebCrypto: browsers, workers, edge runtimes).
 * src/crypto/active.ts chooses one; the engines ask it with `cryptoPort()` and never import node:crypto.
 *
 * Keys are plain values (`PublicKey`: the RSA modulus and exponent, or the curve and point), so a
 * key parsed or cached under one implementation verifies under the other; each implementation keeps
 * its own native form of a key (KeyObject, noble point, CryptoKey) in a WeakMap beside it.
 *
 * Signatures are checked synchronously: the engines are pure synchronous functions. The portable
 * implementation checks ECDSA with @noble/curves at once; an RSA check goes to WebCrypto, which is
 * asynchronous, so an RSA check it has not answered yet is recorded and answers `false`, and
 * `settleSignatures(f)` (active.ts) runs `f` again once WebCrypto has answered what it recorded.
 * See docs/embedding.md, "Synchronous engines, asynchronous WebCrypto".
 */

export type HashAlg = "sha1" | "sha256" | "sha384" | "sha512"

export const HASH_SIZES: Readonly<Record<HashAlg, number>> = { sha1: 20, sha256: 32, sha384: 48, sha512: 64 }

export type Curve = "P-256" | "P-384" | "P-521" | "secp256k1"

export const CURVE_SIZES: Readonly<Record<Curve, number>> = { "P-256": 32, "P-384": 48, "P-521": 66, secp256k1: 32 }

export interface RsaPublicKey {
  readonly type: "rsa"
  /** Modulus, big-endian, without leading zero bytes. */
  readonly n: Uint8Array
  /** Public exponent, big-endian, without leading zero bytes. */
  readonly e: Uint8Array
  /** Modulus size in bits. */
  readonly bits: number
}

export interface EcPublicKey {
  readonly type: "ec"
  readonly curve: Curve
  /** Affine coordinates, each left-padded to the curve's size. */
  readonly x: Uint8Array
  readonly y: Uint8Array
}

/** A public key of a kind the engines do not verify with (Ed25519, DSA, an EC key on another curve). */
export interface OtherPublicKey {
  readonly type: "other"
  /** What it is, for messages: "ed25519", "ec brainpoolP256r1", … */
  readonly kind: string
}

export type PublicKey = RsaPublicKey | EcPublicKey | OtherPublicKey

/** Key material as it comes from a TPM public area or a JWK: unsigned big-endian integers, coordinates of any length up to the curve's. */
export type KeyComponents =
  | { readonly type: "rsa"; readonly n: Uint8Array; readonly e: Uint8Array }
  | { readonly type: "ec"; readonly curve: Curve; readonly x: Uint8Array; readonly y: Uint8Array }

/**
 * How a signature was made: over the message hashed with `hash`.
 * `rsa-pss` `saltLength: "any"` accepts every salt length (the TPM's own verification does).
 * `ecdsa` signatures are r ‖ s (`p1363`, each half the curve's size) or DER `SEQUENCE { r, s }`.
 */
export type SignatureScheme =
  | { readonly alg: "rsa-pkcs1"; readonly hash: HashAlg }
  | { readonly alg: "rsa-pss"; readonly hash: HashAlg; readonly saltLength: number | "any" }
  | { readonly alg: "ecdsa"; readonly hash: HashAlg; readonly encoding: "p1363" | "der" }

export interface Hasher {
  update(data: Uint8Array): Hasher
  /** The digest; the hasher is spent afterwards. */
  digest(): Uint8Array
}

export interface CryptoPort {
  readonly name: "node" | "portable"
  digest(alg: HashAlg, data: Uint8Array): Uint8Array
  /** The digest as a latin1 string (one character per byte): the IMA and quote loops compare these without allocating buffers. */
  digestLatin1(alg: HashAlg, data: Uint8Array): string
  hasher(alg: HashAlg): Hasher
  hmac(alg: HashAlg, key: Uint8Array, ...data: ReadonlyArray<Uint8Array>): Uint8Array
  /** A key from its components; a string says why it is not one (a point off the curve, a zero modulus). */
  importKey(components: KeyComponents): PublicKey | string
  /**
   * A public key from an X.509 certificate, a SubjectPublicKeyInfo or a PKCS#1 RSAPublicKey, as DER
   * bytes or PEM text; undefined when the data is none of these.
   */
  publicKeyFrom(data: Uint8Array | string): PublicKey | undefined
  /** `signature` over `message` by `key`; false for a wrong key type, a malformed signature or a failed check. Never throws. */
  verify(key: PublicKey, scheme: SignatureScheme, message: Uint8Array, signature: Uint8Array): boolean
  /**
   * An RSA PKCS#1 v1.5 signature whose payload is `digestInfo` (DER DigestInfo: algorithm and a
   * digest the caller already has): IMA file signatures sign the file digest itself.
   */
  verifyRsaDigestInfo(key: PublicKey, digestInfo: Uint8Array, signature: Uint8Array): boolean
  /** A DER ECDSA signature over a digest the caller already has (IMA file signatures). */
  verifyEcdsaDigest(key: PublicKey, digest: Uint8Array, derSignature: Uint8Array): boolean
  /** RSA checks recorded by `verify` and not answered yet (always 0 for node). */
  pendingChecks(): number
  /** Answers the recorded checks (WebCrypto); `verify` gives their answers afterwards. */
  settle(): Promise<void>
}

/** Constant time for equal lengths (HMACs, secrets); lengths are not secret. */
export const timingSafeEqual = (a: Uint8Array, b: Uint8Array): boolean => {
  if (a.length !== b.length) return false
  let d = 0
  for (let i = 0; i < a.length; i++) d |= a[i]! ^ b[i]!
  return d === 0
}

const sameBytes = (a: Uint8Array, b: Uint8Array): boolean => {
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}

/** The same key material. */
export const sameKey = (a: PublicKey, b: PublicKey): boolean =>
  a === b ||
  (a.type === "rsa" && b.type === "rsa" && sameBytes(a.n, b.n) && sameBytes(a.e, b.e)) ||
  (a.type === "ec" && b.type === "ec" && a.curve === b.curve && sameBytes(a.x, b.x) && sameBytes(a.y, b.y))

export const stripLeadingZeros = (b: Uint8Array): Uint8Array => {
  let i = 0
  while (i < b.length - 1 && b[i] === 0) i++
  return i === 0 ? b : b.subarray(i)
}

export const leftPad = (b: Uint8Array, size: number): Uint8Array => {
  if (b.length >= size) return b
  const out = new Uint8Array(size)
  out.set(b, size - b.length)
  return out
}

/** Bit length of a big-endian unsigned integer. */
export const bitLength = (b: Uint8Array): number => {
  const s = stripLeadingZeros(b)
  if (s.length === 0 || (s.length === 1 && s[0] === 0)) return 0
  return (s.length - 1) * 8 + (32 - Math.clz32(s[0]!))
}

/** Normalised RSA or EC components (no leading zeros; coordinates padded), or why they are not a key, before any library sees them. */
export const normaliseComponents = (c: KeyComponents): RsaPublicKey | EcPublicKey | string => {
  if (c.type === "rsa") {
    const n = stripLeadingZeros(c.n)
    const e = stripLeadingZeros(c.e)
    if (bitLength(n) === 0) return "the RSA modulus is zero"
    if (bitLength(e) === 0) return "the RSA exponent is zero"
    return { type: "rsa", n: new Uint8Array(n), e: new Uint8Array(e), bits: bitLength(n) }
  }
  const size = CURVE_SIZES[c.curve]
  const x = stripLeadingZeros(c.x)
  const y = stripLeadingZeros(c.y)
  if (x.length > size || y.length > size) return `ECC point larger than ${c.curve}`
  return { type: "ec", curve: c.curve, x: new Uint8Array(leftPad(x, size)), y: new Uint8Array(leftPad(y, size)) }
}

/** "rsa 2048", "ec P-256", "ed25519": for messages. */
export const describeKey = (k: PublicKey): string => (k.type === "rsa" ? `rsa ${k.bits}` : k.type === "ec" ? `ec ${k.curve}` : k.kind)
