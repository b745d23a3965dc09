/**
 * IMA file signatures (evmctl / kernel signature_v2_hdr, tpm-facts.md §4.5) and the keyrings that
 * check them: the tenant's `ima_sign_verification_keys`, the policy's `verification-keys`, and keys
 * learned from `ima-buf` entries. Keys and checks come from the crypto port: RSA with node:crypto or
 * a BigInt public operation, ECDSA over the file digest with @noble/curves on both.
 */
import { Either } from "effect"
import { decodeImaKeyringJson } from "../../schemas/RuntimePolicy.js"
import { cryptoPort } from "../crypto/active.js"
import { base64Bytes, hexBytes, toBase64, toHex } from "../crypto/encoding.js"
import { type PublicKey, sameKey } from "../crypto/port.js"
import { spkiDer, subjectPublicKey } from "../crypto/spki.js"

/** Kernel `enum hash_algo` values used in the v2 header. */
const kernelHashAlgo: Record<number, string> = { 1: "md5", 2: "sha1", 4: "sha256", 5: "sha384", 6: "sha512", 7: "sha224" }

const digestInfoPrefix: Record<string, string> = {
  md5: "3020300c06082a864886f70d020505000410",
  sha1: "3021300906052b0e03021a05000414",
  sha224: "302d300d06096086480165030402040500041c",
  sha256: "3031300d060960864801650304020105000420",
  sha384: "3041300d060960864801650304020205000430",
  sha512: "3051300d060960864801650304020305000440"
}

export interface SigHeader {
  readonly hashAlg: string
  /** 8 lower-case hex characters. */
  readonly keyid: string
  readonly signature: Uint8Array
}

/** `03 02 <hash_algo> <keyid:4> <u16 size BE> <sig>`; undefined when it is not a v2 digital signature. */
export const parseSigHeader = (b: Uint8Array): SigHeader | undefined => {
  if (b.length < 9 || b[0] !== 0x03 || b[1] !== 0x02) return undefined
  const hashAlg = kernelHashAlgo[b[2]!]
  const size = (b[7]! << 8) | b[8]!
  if (hashAlg === undefined || 9 + size !== b.length) return undefined
  return { hashAlg, keyid: toHex(b.subarray(3, 7)), signature: b.subarray(9) }
}

/** IMA keyid: last 4 bytes of SHA-1 over the subjectPublicKey contents (PKCS#1 RSAPublicKey or EC point). */
export const imaKeyId = (key: PublicKey): string | undefined =>
  key.type === "other" ? undefined : toHex(cryptoPort().digest("sha1", subjectPublicKey(key)).subarray(16))

/** A public key from DER or PEM, as an SPKI key, a PKCS#1 RSA key or inside an X.509 certificate; undefined if none. */
export const publicKeyFrom = (data: Uint8Array | string): PublicKey | undefined => cryptoPort().publicKeyFrom(data)

/** RSA, or ECDSA on P-256, P-384 or secp256k1: the keys IMA signatures are checked with. */
export const isSupportedKey = (k: PublicKey): boolean =>
  k.type === "rsa" || (k.type === "ec" && (k.curve === "P-256" || k.curve === "P-384" || k.curve === "secp256k1"))

/** Verify a v2 signature over `fileDigest` with one key. Never throws. */
export const verifyWithKey = (key: PublicKey, h: SigHeader, fileDigest: Uint8Array): boolean => {
  if (key.type === "rsa") {
    const prefix = digestInfoPrefix[h.hashAlg]
    if (prefix === undefined) return false
    const digestInfo = new Uint8Array(prefix.length / 2 + fileDigest.length)
    digestInfo.set(hexBytes(prefix))
    digestInfo.set(fileDigest, prefix.length / 2)
    return cryptoPort().verifyRsaDigestInfo(key, digestInfo, h.signature)
  }
  return isSupportedKey(key) && cryptoPort().verifyEcdsaDigest(key, fileDigest, h.signature)
}

/**
 * keyid → keys. Learned keys are kept per keyring name so they can be persisted with the agent's
 * state. A keyring can sit over other keyrings (the tenant's, the policy's) and look keys up in
 * them too: one evaluation adds what it learns to its own layer without copying the others.
 */
export class ImaKeyring {
  private readonly byId = new Map<string, Array<PublicKey>>()
  readonly learned: Array<{ readonly keyring: string; readonly der: string }> = []

  constructor(private readonly bases: ReadonlyArray<ImaKeyring> = []) {}

  /** A keyring over the given ones (undefined entries skipped), to learn into. */
  static over(...bases: ReadonlyArray<ImaKeyring | undefined>): ImaKeyring {
    return new ImaKeyring(bases.filter((b): b is ImaKeyring => b !== undefined && b.size > 0))
  }

  /** Key ids here and in the keyrings below (a key id in two layers counts twice: used as "any keys?"). */
  get size(): number {
    let n = this.byId.size
    for (const b of this.bases) n += b.size
    return n
  }

  add(key: PublicKey): string | undefined {
    const id = imaKeyId(key)
    if (id !== undefined) this.addWithId(id, key)
    return id
  }

  /** Adds a key seen in an ima-buf entry and remembers it (base64 SPKI DER) for the state. */
  learn(keyring: string, key: PublicKey): void {
    this.add(key)
    if (key.type !== "other") this.learned.push({ keyring, der: toBase64(spkiDer(key)) })
  }

  /**
   * Adds a key learned in an earlier round, as the state stores it (base64 SPKI DER); false when it
   * is not a key. Parsed keys are cached by their DER: every round of every agent restores them.
   */
  restore(keyring: string, der: string): boolean {
    const known = restoredKey(der)
    if (known === undefined) return false
    if (known.id !== undefined) this.addWithId(known.id, known.key)
    this.learned.push({ keyring, der })
    return true
  }

  /** Checks an ima-sig signature field against the file digest of the entry. */
  verify(sig: Uint8Array, fileDigest: Uint8Array): boolean {
    const h = parseSigHeader(sig)
    return h !== undefined && this.verifyHeader(h, fileDigest)
  }

  addAll(other: ImaKeyring): void {
    for (const list of other.byId.values()) for (const k of list) this.add(k)
    for (const b of other.bases) this.addAll(b)
  }

  /** A keyring with the same keys (this layer's and those below), learning nothing from this one. */
  clone(): ImaKeyring {
    const k = new ImaKeyring(this.bases)
    for (const [id, list] of this.byId) k.byId.set(id, [...list])
    return k
  }

  private verifyHeader(h: SigHeader, fileDigest: Uint8Array): boolean {
    const keys = this.byId.get(h.keyid)
    if (keys !== undefined) for (const k of keys) if (verifyWithKey(k, h, fileDigest)) return true
    for (const b of this.bases) if (b.verifyHeader(h, fileDigest)) return true
    return false
  }

  private addWithId(id: string, key: PublicKey): void {
    const list = this.byId.get(id)
    if (list === undefined) this.byId.set(id, [key])
    else if (!list.some((k) => sameKey(k, key))) list.push(key)
  }
}

const RESTORED_MAX = 4096
const restored = new Map<string, { readonly key: PublicKey; readonly id: string | undefined } | undefined>()

/** A learned key from its stored DER, parsed once per process (bounded: the oldest is dropped first). */
const restoredKey = (der: string): { readonly key: PublicKey; readonly id: string | undefined } | undefined => {
  if (restored.has(der)) return restored.get(der)
  const key = publicKeyFrom(base64Bytes(der))
  const entry = key === undefined ? undefined : { key, id: imaKeyId(key) }
  if (restored.size >= RESTORED_MAX) restored.delete(restored.keys().next().value!)
  restored.set(der, entry)
  return entry
}

/**
 * Keyring from `ima_sign_verification_keys` / the policy's `verification-keys`:
 * `{"meta":{"version":1},"keyids":[…],"pubkeys":[PEM…]}`. An empty string gives an empty keyring.
 */
export const keyringFromJson = (json: string): Either.Either<ImaKeyring, string> => {
  const keyring = new ImaKeyring()
  if (json.trim() === "") return Either.right(keyring)
  const decoded = decodeImaKeyringJson(json)
  if (Either.isLeft(decoded)) return Either.left(`IMA verification keys are not a keyring JSON object: ${decoded.left.message}`)
  for (const [i, pem] of decoded.right.pubkeys.entries()) {
    const key = publicKeyFrom(pem)
    if (key === undefined || !isSupportedKey(key)) return Either.left(`IMA verification key ${i} is not a supported RSA or EC public key`)
    keyring.add(key)
  }
  return Either.right(keyring)
}

/** Keyring from PEM keys or certificates (for tests and the CLI). */
export const keyringFromPems = (pems: ReadonlyArray<string>): Either.Either<ImaKeyring, string> => {
  const keyring = new ImaKeyring()
  for (const [i, pem] of pems.entries()) {
    const key = publicKeyFrom(pem)
    if (key === undefined || !isSupportedKey(key)) return Either.left(`key ${i} is not a supported RSA or EC public key`)
    keyring.add(key)
  }
  return Either.right(keyring)
}
