/**
 * The crypto port without node: digests and HMAC with @noble/hashes, ECDSA with @noble/curves (both
 * synchronous, audited, pure JavaScript), RSA signatures with WebCrypto (`crypto.subtle`, in every
 * browser, worker and edge runtime).
 *
 * WebCrypto is asynchronous and the engines are synchronous, so `verify` with an RSA key answers
 * from the checks WebCrypto already made; one it has not made yet is recorded and answers `false`,
 * and `settle()` makes the recorded ones. `settleSignatures(f)` (active.ts) runs an engine, settles,
 * and runs it again until it asks nothing new: the engines are pure, so the second run is the
 * verdict with every RSA answer in place. Answers are kept by a SHA-256 of key, scheme, message and
 * signature, so a recorded `true` answers only that exact check.
 *
 * WebCrypto cannot check an RSA signature over a digest the caller already has (IMA file signatures
 * sign the file digest): there the public operation s^e mod n is computed with BigInt and the whole
 * PKCS#1 v1.5 block compared with the one expected (nothing in the decrypted block is parsed).
 */
import { hmac } from "@noble/hashes/hmac.js"
import { sha1 } from "@noble/hashes/legacy.js"
import { sha256, sha384, sha512 } from "@noble/hashes/sha2.js"
import { concat, portableLatin1, toBase64Url, utf8Bytes } from "./encoding.js"
import { publicKeyWith } from "./keys.js"
import { nobleVerifyDigest, pointOf } from "./noble.js"
import {
  type CryptoPort,
  type HashAlg,
  HASH_SIZES,
  type KeyComponents,
  normaliseComponents,
  type PublicKey,
  type RsaPublicKey,
  type SignatureScheme,
  timingSafeEqual
} from "./port.js"

const HASHES = { sha1, sha256, sha384, sha512 } as const
const WEB_HASH: Readonly<Record<HashAlg, string>> = { sha1: "SHA-1", sha256: "SHA-256", sha384: "SHA-384", sha512: "SHA-512" }

const MAX_ANSWERS = 65_536

/** The part of WebCrypto's SubtleCrypto used here (typed locally: the project compiles without the DOM library). */
type WebKey = object
interface Subtle {
  importKey(format: "jwk", key: object, algorithm: { readonly name: string; readonly hash: string }, extractable: boolean, usages: ReadonlyArray<string>): Promise<WebKey>
  verify(algorithm: { readonly name: string; readonly saltLength?: number }, key: WebKey, signature: Uint8Array, data: Uint8Array): Promise<boolean>
}

const bigOf = (b: Uint8Array): bigint => {
  let v = 0n
  for (let i = 0; i < b.length; i++) v = (v << 8n) | BigInt(b[i]!)
  return v
}

const modPow = (base: bigint, exp: bigint, m: bigint): bigint => {
  let r = 1n
  let b = base % m
  for (let e = exp; e > 0n; e >>= 1n) {
    if (e & 1n) r = (r * b) % m
    b = (b * b) % m
  }
  return r
}

/** The RSA public operation s^e mod n as k bytes (k = modulus size), or undefined when s is not below n (RFC 8017 §5.2.2). */
const rsaPublic = (key: RsaPublicKey, signature: Uint8Array): Uint8Array | undefined => {
  const k = key.n.length
  if (signature.length > k) return undefined
  const n = bigOf(key.n)
  const s = bigOf(signature)
  if (s >= n) return undefined
  let m = modPow(s, bigOf(key.e), n)
  const out = new Uint8Array(k)
  for (let i = k - 1; i >= 0 && m > 0n; i--) {
    out[i] = Number(m & 0xffn)
    m >>= 8n
  }
  return out
}

interface Check {
  readonly key: RsaPublicKey
  readonly scheme: SignatureScheme
  readonly message: Uint8Array
  readonly signature: Uint8Array
}

const u32 = (n: number) => Uint8Array.of(n >>> 24, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff)

/** SHA-256 over the check's parts, each length-prefixed: the key of its answer. */
const checkId = (c: Check): string => {
  const h = sha256.create()
  const scheme = utf8Bytes(c.scheme.alg === "rsa-pss" ? `rsa-pss/${c.scheme.hash}/${c.scheme.saltLength}` : `${c.scheme.alg}/${c.scheme.hash}`)
  for (const part of [c.key.n, c.key.e, scheme, c.message, c.signature]) h.update(u32(part.length)).update(part)
  return portableLatin1(h.digest())
}

const make = (): CryptoPort => {
  const answers = new Map<string, boolean>()
  const pending = new Map<string, Check>()
  const webKeys = new WeakMap<RsaPublicKey, Map<string, Promise<WebKey>>>()

  const subtle = (): Subtle => {
    const s = (globalThis as { readonly crypto?: { readonly subtle?: Subtle } }).crypto?.subtle
    if (s === undefined) throw new Error("WebCrypto (crypto.subtle) is not available here: RSA signatures cannot be checked")
    return s
  }

  const webKey = (key: RsaPublicKey, name: "RSASSA-PKCS1-v1_5" | "RSA-PSS", hash: HashAlg): Promise<WebKey> => {
    let byAlg = webKeys.get(key)
    if (byAlg === undefined) webKeys.set(key, (byAlg = new Map()))
    const id = `${name}/${hash}`
    const known = byAlg.get(id)
    if (known !== undefined) return known
    const k = subtle().importKey("jwk", { kty: "RSA", n: toBase64Url(key.n), e: toBase64Url(key.e), ext: true }, { name, hash: WEB_HASH[hash] }, false, ["verify"])
    byAlg.set(id, k)
    return k
  }

  /** One check with WebCrypto; a key or signature WebCrypto refuses is a failed check. */
  const webVerify = async (c: Check): Promise<boolean> => {
    const s = subtle()
    const data = c.message
    const sig = c.signature
    try {
      if (c.scheme.alg === "rsa-pkcs1") return await s.verify({ name: "RSASSA-PKCS1-v1_5" }, await webKey(c.key, "RSASSA-PKCS1-v1_5", c.scheme.hash), sig, data)
      if (c.scheme.alg !== "rsa-pss") return false
      const key = await webKey(c.key, "RSA-PSS", c.scheme.hash)
      const pss = (saltLength: number) => s.verify({ name: "RSA-PSS", saltLength }, key, sig, data)
      if (c.scheme.saltLength !== "any") return await pss(c.scheme.saltLength)
      // Every salt length, as node's RSA_PSS_SALTLEN_AUTO accepts: the usual ones (the digest's
      // length, the largest) first, so a valid signature costs one or two checks.
      const hLen = HASH_SIZES[c.scheme.hash]
      const max = Math.ceil((c.key.bits - 1) / 8) - hLen - 2
      if (max < 0) return false
      const order = [hLen, max, ...Array.from({ length: max + 1 }, (_, i) => i).filter((i) => i !== hLen && i !== max)]
      for (const salt of order) if (salt <= max && (await pss(salt))) return true
      return false
    } catch {
      return false
    }
  }

  const digest = (alg: HashAlg, data: Uint8Array): Uint8Array => HASHES[alg](data)

  const self: CryptoPort = {
    name: "portable",
    digest,
    digestLatin1: (alg, data) => portableLatin1(HASHES[alg](data)),
    hasher: (alg) => {
      const h = HASHES[alg].create()
      const hasher = {
        update: (data: Uint8Array) => {
          h.update(data)
          return hasher
        },
        digest: () => h.digest()
      }
      return hasher
    },
    hmac: (alg, key, ...data) => hmac(HASHES[alg], key, data.length === 1 ? data[0]! : concat(...data)),
    importKey: (c: KeyComponents) => {
      const n = normaliseComponents(c)
      if (typeof n === "string") return n
      if (n.type === "ec" && pointOf(n.curve, concat(Uint8Array.of(4), n.x, n.y)) === undefined) return `not a valid public key: the point is not on ${n.curve}`
      return n
    },
    publicKeyFrom: (data) => publicKeyWith(self.importKey)(data),
    verify: (key: PublicKey, scheme: SignatureScheme, message: Uint8Array, signature: Uint8Array): boolean => {
      if (scheme.alg === "ecdsa") return key.type === "ec" && nobleVerifyDigest(key, digest(scheme.hash, message), signature, scheme.encoding === "p1363" ? "compact" : "der")
      if (key.type !== "rsa") return false
      const check: Check = { key, scheme, message, signature }
      const id = checkId(check)
      const known = answers.get(id)
      if (known !== undefined) return known
      // copies: the caller's buffers may be reused before the check is settled
      pending.set(id, { key, scheme, message: message.slice(), signature: signature.slice() })
      return false
    },
    verifyRsaDigestInfo: (key, digestInfo, signature) => {
      if (key.type !== "rsa") return false
      const em = rsaPublic(key, signature)
      if (em === undefined) return false
      const ps = em.length - digestInfo.length - 3
      if (ps < 8) return false
      const expected = new Uint8Array(em.length).fill(0xff)
      expected[0] = 0
      expected[1] = 1
      expected[2 + ps] = 0
      expected.set(digestInfo, 3 + ps)
      return timingSafeEqual(em, expected)
    },
    verifyEcdsaDigest: (key, d, derSignature) => nobleVerifyDigest(key, d, derSignature),
    pendingChecks: () => pending.size,
    settle: async () => {
      const batch = [...pending.entries()]
      pending.clear()
      const results = await Promise.all(batch.map(([, c]) => webVerify(c)))
      batch.forEach(([id], i) => answers.set(id, results[i]!))
      while (answers.size > MAX_ANSWERS) answers.delete(answers.keys().next().value!)
    }
  }
  return self
}

let port: CryptoPort | undefined

/** The portable port (one per process: its answered RSA checks are shared). */
export const portableCryptoPort = (): CryptoPort => (port ??= make())

/** A portable port of its own, with no answered checks yet (benches measure a round without the answers of the last). */
export const makePortableCryptoPort = (): CryptoPort => make()
