/**
 * The crypto port on node:crypto: the default wherever node:crypto exists, and the one the hot
 * paths were measured with (one-shot `crypto.hash`, KeyObjects cached per key, native verification).
 * Keys are read by the same plain-code reader as the portable port's (keys.ts) and imported here.
 * node:crypto is taken with `process.getBuiltinModule` (node ≥ 20.16, Deno, Bun), not imported, so the
 * engines that reach this module still bundle for a browser, where `nodeCryptoPort()` is undefined.
 * ECDSA over a given digest (IMA file signatures), which node:crypto cannot do, is @noble/curves'.
 */
import type * as NodeCrypto from "node:crypto"
import { nobleVerifyDigest } from "./noble.js"
import {
  type CryptoPort,
  type EcPublicKey,
  HASH_SIZES,
  type HashAlg,
  type Hasher,
  type KeyComponents,
  normaliseComponents,
  type PublicKey,
  type RsaPublicKey,
  type SignatureScheme,
  timingSafeEqual
} from "./port.js"
import { toBase64Url } from "./encoding.js"
import { publicKeyWith } from "./keys.js"

type Crypto = typeof NodeCrypto

const load = (): Crypto | undefined => {
  const p = (globalThis as { readonly process?: { readonly getBuiltinModule?: (id: string) => unknown } }).process
  try {
    return p?.getBuiltinModule?.("node:crypto") as Crypto | undefined
  } catch {
    return undefined
  }
}

/** The key as node imports it (JWK `crv` names are the port's curve names). */
const jwkOf = (key: RsaPublicKey | EcPublicKey): NodeCrypto.JsonWebKey =>
  key.type === "rsa" ? { kty: "RSA", n: toBase64Url(key.n), e: toBase64Url(key.e) } : { kty: "EC", crv: key.curve, x: toBase64Url(key.x), y: toBase64Url(key.y) }

const make = (crypto: Crypto): CryptoPort => {
  const keyObjects = new WeakMap<PublicKey, NodeCrypto.KeyObject>()

  const keyObjectOf = (key: PublicKey): NodeCrypto.KeyObject | undefined => {
    let k = keyObjects.get(key)
    if (k === undefined && key.type !== "other") {
      try {
        k = crypto.createPublicKey({ key: jwkOf(key), format: "jwk" })
      } catch {
        return undefined
      }
      keyObjects.set(key, k)
    }
    return k
  }

  // crypto.hash (node ≥ 20.12) is a one-shot digest without a Hash object: measurably cheaper for
  // the ~100-byte inputs of the IMA and quote loops, and its latin1 result costs no ArrayBuffer.
  const oneShot = crypto.hash as ((alg: string, data: Uint8Array, encoding: string) => unknown) | undefined
  // A plain view of node's result (its own memory, not the pool's): no copy.
  const view = (b: Uint8Array) => new Uint8Array(b.buffer, b.byteOffset, b.byteLength)
  const digest: (alg: HashAlg, data: Uint8Array) => Uint8Array = oneShot
    ? (alg, data) => view(oneShot(alg, data, "buffer") as Uint8Array)
    : (alg, data) => view(crypto.createHash(alg).update(data).digest())
  const digestLatin1: (alg: HashAlg, data: Uint8Array) => string = oneShot
    ? (alg, data) => oneShot(alg, data, "latin1") as string
    : (alg, data) => crypto.createHash(alg).update(data).digest("binary")

  const self: CryptoPort = {
    name: "node",
    digest,
    digestLatin1,
    hasher: (alg): Hasher => {
      const h = crypto.createHash(alg)
      const hasher: Hasher = {
        update: (data) => {
          h.update(data)
          return hasher
        },
        digest: () => new Uint8Array(h.digest())
      }
      return hasher
    },
    hmac: (alg, key, ...data) => {
      const h = crypto.createHmac(alg, key)
      for (const d of data) h.update(d)
      return new Uint8Array(h.digest())
    },
    importKey: (c: KeyComponents) => {
      const n = normaliseComponents(c)
      if (typeof n === "string") return n
      try {
        keyObjects.set(n, crypto.createPublicKey({ key: jwkOf(n), format: "jwk" }))
        return n
      } catch (e) {
        return `not a valid public key: ${e instanceof Error ? e.message : String(e)}`
      }
    },
    publicKeyFrom: (data) => publicKeyWith(self.importKey)(data),
    verify: (key: PublicKey, scheme: SignatureScheme, message: Uint8Array, signature: Uint8Array): boolean => {
      const k = keyObjectOf(key)
      if (k === undefined) return false
      try {
        if (scheme.alg === "ecdsa") {
          if (key.type !== "ec") return false
          return crypto.verify(scheme.hash, message, { key: k, dsaEncoding: scheme.encoding === "p1363" ? "ieee-p1363" : "der" }, signature)
        }
        if (key.type !== "rsa") return false
        if (scheme.alg === "rsa-pkcs1") return crypto.verify(scheme.hash, message, k, signature)
        const pss = (saltLength: number) => crypto.verify(scheme.hash, message, { key: k, padding: crypto.constants.RSA_PKCS1_PSS_PADDING, saltLength }, signature)
        return scheme.saltLength === "any" ? pss(HASH_SIZES[scheme.hash]) || pss(crypto.constants.RSA_PSS_SALTLEN_AUTO) : pss(scheme.saltLength)
      } catch {
        return false
      }
    },
    verifyRsaDigestInfo: (key, digestInfo, signature) => {
      const k = keyObjectOf(key)
      if (k === undefined || key.type !== "rsa") return false
      try {
        const em = crypto.publicDecrypt({ key: k, padding: crypto.constants.RSA_PKCS1_PADDING }, signature)
        return timingSafeEqual(new Uint8Array(em), digestInfo)
      } catch {
        return false
      }
    },
    verifyEcdsaDigest: (key, digest, derSignature) => nobleVerifyDigest(key, digest, derSignature),
    pendingChecks: () => 0,
    settle: () => Promise.resolve()
  }
  return self
}

let port: CryptoPort | null | undefined

/** The node:crypto port, or undefined where there is no node:crypto. */
export const nodeCryptoPort = (): CryptoPort | undefined => {
  if (port === undefined) {
    const crypto = load()
    port = crypto === undefined ? null : make(crypto)
  }
  return port ?? undefined
}
