/**
 * MakeCredential / ActivateCredential in software (TPM 2.0 Part 1 §24, Part 3 §12.6), and the
 * tpm2-tools credential file.
 *
 * Keylime's registrar answers `blob` = base64 of the tpm2-tools file format
 * (u32 0xBADCC0DE ‖ u32 1 ‖ TPM2B_ID_OBJECT ‖ TPM2B_ENCRYPTED_SECRET), keylime-wire.md §5,
 * so `encodeCredentialFile` is the registrar's wire form too.
 */
import {
  createCipheriv, createDecipheriv, createECDH, createHmac, diffieHellman,
  privateDecrypt, publicEncrypt, randomBytes, constants as cryptoConstants, type KeyObject
} from "node:crypto"
import { Either } from "effect"
import type { CredentialBlob } from "./Tpm.js"
import { concatBytes, equalBytes, parseWhole, parseWith, Writer } from "./bytes.js"
import { CREDENTIAL_FILE_MAGIC, CREDENTIAL_FILE_VERSION, TPM_ALG } from "./constants.js"
import { CredentialError, type TpmParseError } from "./errors.js"
import { digestSize, type HashAlg } from "./hashAlg.js"
import { kdfa, kdfe } from "./kdf.js"
import { keyObjectOf } from "./nodeKeys.js"
import { curveInfo, type EccPublicFields, type TpmtPublic } from "./public.js"

export type { CredentialBlob } from "./Tpm.js"

/** Source of random bytes; injectable for deterministic tests. */
export type Rng = (n: number) => Uint8Array

const defaultRng: Rng = (n) => new Uint8Array(randomBytes(n))

const IDENTITY_LABEL = new TextEncoder().encode("IDENTITY\0")

const fail = (reason: CredentialError["reason"], message: string) => Either.left(new CredentialError({ reason, message }))

const errText = (e: unknown): string => (e instanceof Error ? e.message : String(e))

/** AES key bits of the EK's symmetric definition (AES-CFB is what a storage parent uses). */
const symKeyBits = (ek: TpmtPublic): number | undefined =>
  (ek.type === "rsa" || ek.type === "ecc") && ek.symmetric !== null && ek.symmetric.alg === TPM_ALG.aes && ek.symmetric.mode === TPM_ALG.cfb
    ? ek.symmetric.keyBits
    : undefined

const leftPad = (b: Uint8Array, size: number): Uint8Array => (b.length >= size ? b : concatBytes(new Uint8Array(size - b.length), b))

const aesCfb = (bits: number): string => `aes-${bits}-cfb`

const ecdhSharedX = (privateKey: KeyObject, publicKey: KeyObject): Uint8Array =>
  new Uint8Array(diffieHellman({ privateKey, publicKey }))

const eccPointKey = (ek: EccPublicFields, x: Uint8Array, y: Uint8Array): Either.Either<KeyObject, TpmParseError> =>
  keyObjectOf({ ...ek, x, y })

/** The seed-derived protection: encIdentity and its outer HMAC (Part 1 §24.4/§24.5). */
const protect = (
  nameAlg: HashAlg,
  aesBits: number,
  seed: Uint8Array,
  akName: Uint8Array,
  secret: Uint8Array
): Uint8Array => {
  const symKey = kdfa(nameAlg, seed, "STORAGE", akName, new Uint8Array(0), aesBits)
  const plain = new Writer(secret.length + 2).tpm2b(secret).finish()
  const c = createCipheriv(aesCfb(aesBits), symKey, Buffer.alloc(16))
  const encIdentity = new Uint8Array(Buffer.concat([c.update(plain), c.final()]))
  const hmacKey = kdfa(nameAlg, seed, "INTEGRITY", new Uint8Array(0), new Uint8Array(0), digestSize(nameAlg) * 8)
  const integrity = new Uint8Array(createHmac(nameAlg, hmacKey).update(encIdentity).update(akName).digest())
  return new Writer(2 + integrity.length + encIdentity.length).tpm2b(integrity).bytes(encIdentity).finish()
}

/**
 * TPM2_MakeCredential done in software: wraps `secret` (≤ digest size of the EK nameAlg) to the
 * EK, bound to the AK name. RSA EKs: OAEP(nameAlg, label "IDENTITY\0") of a random seed. ECC EKs:
 * an ephemeral key on the EK curve, seed = KDFe(nameAlg, Z, "IDENTITY", ephemeral.x, EK.x).
 */
export const makeCredential = (
  ekPublic: TpmtPublic,
  akName: Uint8Array,
  secret: Uint8Array,
  rng: Rng = defaultRng
): Either.Either<CredentialBlob, CredentialError> => {
  const nameAlg = ekPublic.nameAlg
  const aesBits = symKeyBits(ekPublic)
  if (aesBits === undefined) return fail("key", "the EK has no AES-CFB symmetric definition (not a storage key)")
  if (secret.length > digestSize(nameAlg)) return fail("key", `secret of ${secret.length} bytes exceeds the ${nameAlg} digest size`)
  const key = keyObjectOf(ekPublic)
  if (Either.isLeft(key)) return fail("key", key.left.message)
  try {
    let seed: Uint8Array
    let encSecret: Uint8Array
    if (ekPublic.type === "rsa") {
      seed = rng(digestSize(nameAlg))
      encSecret = new Uint8Array(
        publicEncrypt({ key: key.right, padding: cryptoConstants.RSA_PKCS1_OAEP_PADDING, oaepHash: nameAlg, oaepLabel: IDENTITY_LABEL }, seed)
      )
    } else if (ekPublic.type === "ecc") {
      const c = curveInfo(ekPublic.curveId)!
      // Ephemeral scalar from rng so tests can be deterministic; an out-of-range scalar throws (caught below).
      const ecdh = createECDH(c.crv === "P-256" ? "prime256v1" : "secp384r1")
      ecdh.setPrivateKey(rng(c.size))
      const point = ecdh.getPublicKey()
      const ex = new Uint8Array(point.subarray(1, 1 + c.size))
      const ey = new Uint8Array(point.subarray(1 + c.size))
      const ekPoint = concatBytes(Uint8Array.of(4), leftPad(ekPublic.x, c.size), leftPad(ekPublic.y, c.size))
      const z = new Uint8Array(ecdh.computeSecret(ekPoint))
      seed = kdfe(nameAlg, z, "IDENTITY", ex, ekPublic.x, digestSize(nameAlg) * 8)
      encSecret = new Writer(4 + ex.length + ey.length).tpm2b(ex).tpm2b(ey).finish()
    } else {
      return fail("key", `cannot make a credential for a ${ekPublic.type} EK`)
    }
    return Either.right({ credential: protect(nameAlg, aesBits, seed, akName, secret), secret: encSecret })
  } catch (e) {
    return fail("crypto", errText(e))
  }
}

/**
 * TPM2_ActivateCredential with the EK private key in hand (the simulator's half): recovers the
 * seed, checks the integrity HMAC before decrypting (as a TPM does), returns the secret.
 */
export const activateCredentialWithKey = (
  ekPrivateKey: KeyObject,
  ekPublic: TpmtPublic,
  akName: Uint8Array,
  blob: CredentialBlob
): Either.Either<Uint8Array, CredentialError> => {
  const nameAlg = ekPublic.nameAlg
  const aesBits = symKeyBits(ekPublic)
  if (aesBits === undefined) return fail("key", "the EK has no AES-CFB symmetric definition")
  let seed: Uint8Array
  try {
    if (ekPublic.type === "rsa") {
      seed = new Uint8Array(
        privateDecrypt({ key: ekPrivateKey, padding: cryptoConstants.RSA_PKCS1_OAEP_PADDING, oaepHash: nameAlg, oaepLabel: IDENTITY_LABEL }, blob.secret)
      )
    } else if (ekPublic.type === "ecc") {
      const point = parseWhole("TPMS_ECC_POINT", blob.secret, (r) => {
        const x = r.tpm2b("TPMS_ECC_POINT.x")
        const y = r.tpm2b("TPMS_ECC_POINT.y")
        return { x, y }
      })
      if (Either.isLeft(point)) return fail("parse", point.left.message)
      const eph = eccPointKey(ekPublic, point.right.x, point.right.y)
      if (Either.isLeft(eph)) return fail("parse", `ephemeral point: ${eph.left.message}`)
      const z = ecdhSharedX(ekPrivateKey, eph.right)
      seed = kdfe(nameAlg, z, "IDENTITY", point.right.x, ekPublic.x, digestSize(nameAlg) * 8)
    } else {
      return fail("key", `cannot activate with a ${ekPublic.type} EK`)
    }
  } catch (e) {
    return fail("decrypt", `cannot recover the seed: ${errText(e)}`)
  }
  const parts = parseWith("TPM2B_ID_OBJECT", blob.credential, (r) => ({ integrity: r.tpm2b("TPM2B_DIGEST"), encIdentity: r.bytes(r.remaining) }))
  if (Either.isLeft(parts)) return fail("parse", parts.left.message)
  const { encIdentity, integrity } = parts.right
  const hmacKey = kdfa(nameAlg, seed, "INTEGRITY", new Uint8Array(0), new Uint8Array(0), digestSize(nameAlg) * 8)
  const expected = new Uint8Array(createHmac(nameAlg, hmacKey).update(encIdentity).update(akName).digest())
  if (!equalBytes(expected, integrity)) return fail("integrity", "integrity HMAC does not match (wrong EK, AK name or a tampered blob)")
  try {
    const symKey = kdfa(nameAlg, seed, "STORAGE", akName, new Uint8Array(0), aesBits)
    const d = createDecipheriv(aesCfb(aesBits), symKey, Buffer.alloc(16))
    const plain = new Uint8Array(Buffer.concat([d.update(encIdentity), d.final()]))
    const secret = parseWhole("TPM2B_DIGEST", plain, (r) => r.tpm2b("TPM2B_DIGEST"))
    if (Either.isLeft(secret)) return fail("decrypt", `decrypted credential is malformed: ${secret.left.message}`)
    return Either.right(new Uint8Array(secret.right))
  } catch (e) {
    return fail("decrypt", errText(e))
  }
}

/** tpm2-tools credential file: BADCC0DE ‖ 00000001 ‖ TPM2B_ID_OBJECT ‖ TPM2B_ENCRYPTED_SECRET. */
export const encodeCredentialFile = (blob: CredentialBlob): Uint8Array =>
  new Writer(12 + blob.credential.length + blob.secret.length)
    .u32(CREDENTIAL_FILE_MAGIC)
    .u32(CREDENTIAL_FILE_VERSION)
    .tpm2b(blob.credential)
    .tpm2b(blob.secret)
    .finish()

export const decodeCredentialFile = (bytes: Uint8Array): Either.Either<CredentialBlob, TpmParseError> =>
  parseWith("credential file", bytes, (r) => {
    if (r.u32() !== CREDENTIAL_FILE_MAGIC) r.fail("bad magic (expected BADCC0DE)", "credential file", 0)
    const version = r.u32()
    if (version !== CREDENTIAL_FILE_VERSION) r.fail(`unsupported version ${version}`, "credential file", 4)
    const credential = new Uint8Array(r.tpm2b("TPM2B_ID_OBJECT"))
    const secret = new Uint8Array(r.tpm2b("TPM2B_ENCRYPTED_SECRET"))
    r.end("credential file")
    return { credential, secret }
  })

/** Raw TPM2B parts (size-prefixed), as some APIs carry them. */
export const encodeCredentialParts = (blob: CredentialBlob): { readonly idObject: Uint8Array; readonly encryptedSecret: Uint8Array } => ({
  idObject: new Writer(blob.credential.length + 2).tpm2b(blob.credential).finish(),
  encryptedSecret: new Writer(blob.secret.length + 2).tpm2b(blob.secret).finish()
})

