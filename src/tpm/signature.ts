/**
 * TPMT_SIGNATURE (Part 2 §11.3.4) for RSASSA, RSAPSS and ECDSA, and its verification with
 * node:crypto. ECDAA and EC-Schnorr signatures parse to a clear error: they need the TPM's
 * anonymous/Schnorr verification, which attestation does not use.
 */
import { constants as cryptoConstants, verify, type KeyObject } from "node:crypto"
import { Either } from "effect"
import { parseWhole, type Reader, Writer } from "./bytes.js"
import { TPM_ALG } from "./constants.js"
import type { TpmParseError } from "./errors.js"
import { algIdOf, digestSize, hashAlgFromId, type HashAlg } from "./hashAlg.js"

export interface RsaSignature {
  readonly alg: "rsassa" | "rsapss"
  readonly hash: HashAlg
  readonly sig: Uint8Array
}

export interface EcdsaSignature {
  readonly alg: "ecdsa"
  readonly hash: HashAlg
  readonly r: Uint8Array
  readonly s: Uint8Array
}

export type TpmtSignature = RsaSignature | EcdsaSignature

export const readSignature = (r: Reader): TpmtSignature => {
  const S = "TPMT_SIGNATURE"
  const algAt = r.offset
  const alg = r.u16(S)
  if (alg === TPM_ALG.ecdaa || alg === TPM_ALG.ecschnorr) {
    r.fail(`${alg === TPM_ALG.ecdaa ? "ECDAA" : "EC-Schnorr"} signatures are not supported (use an ECDSA AK)`, S, algAt)
  }
  if (alg !== TPM_ALG.rsassa && alg !== TPM_ALG.rsapss && alg !== TPM_ALG.ecdsa) {
    r.fail(`unsupported signature algorithm 0x${alg.toString(16)}`, S, algAt)
  }
  const hashAt = r.offset
  const hash = hashAlgFromId(r.u16(S))
  if (hash === undefined) r.fail("unsupported signature hash algorithm", S, hashAt)
  if (alg === TPM_ALG.ecdsa) {
    const rr = r.tpm2b("TPMS_SIGNATURE_ECDSA.signatureR")
    const ss = r.tpm2b("TPMS_SIGNATURE_ECDSA.signatureS")
    return { alg: "ecdsa", hash, r: rr, s: ss }
  }
  return { alg: alg === TPM_ALG.rsassa ? "rsassa" : "rsapss", hash, sig: r.tpm2b("TPM2B_PUBLIC_KEY_RSA") }
}

/** TPMT_SIGNATURE bytes (tpm2_quote -s), fully consumed. */
export const parseSignature = (bytes: Uint8Array): Either.Either<TpmtSignature, TpmParseError> =>
  parseWhole("TPMT_SIGNATURE", bytes, readSignature)

export const writeSignature = (w: Writer, s: TpmtSignature): void => {
  w.u16(TPM_ALG[s.alg]).u16(algIdOf(s.hash))
  if (s.alg === "ecdsa") w.tpm2b(s.r).tpm2b(s.s)
  else w.tpm2b(s.sig)
}

export const marshalSignature = (s: TpmtSignature): Uint8Array => {
  const w = new Writer(s.alg === "ecdsa" ? 8 + s.r.length + s.s.length : 6 + s.sig.length)
  writeSignature(w, s)
  return w.finish()
}

/** Curve byte size of an EC key, cached: asymmetricKeyDetails is a native call. */
const curveSizes = new WeakMap<KeyObject, number>()
const curveSizeOf = (key: KeyObject): number => {
  let size = curveSizes.get(key)
  if (size === undefined) {
    const c = key.asymmetricKeyDetails?.namedCurve
    size = c === "prime256v1" || c === "P-256" ? 32 : c === "secp384r1" || c === "P-384" ? 48 : c === "secp521r1" ? 66 : 0
    curveSizes.set(key, size)
  }
  return size
}

/** r ‖ s, each left-padded to the curve size (ieee-p1363); undefined when a half is too long. */
export const ecdsaP1363 = (sig: EcdsaSignature, size: number): Uint8Array | undefined => {
  const r = stripZeros(sig.r)
  const s = stripZeros(sig.s)
  if (r.length > size || s.length > size) return undefined
  const out = new Uint8Array(2 * size)
  out.set(r, size - r.length)
  out.set(s, 2 * size - s.length)
  return out
}

const stripZeros = (b: Uint8Array): Uint8Array => {
  let i = 0
  while (i < b.length - 1 && b[i] === 0) i++
  return i === 0 ? b : b.subarray(i)
}

/**
 * Verifies `sig` over `message` (the TPM signs H(message) with the signature's hash).
 * RSAPSS: TPMs use salt length = digest length; any other salt length is accepted as the TPM's
 * own verification does (auto-detected), tried only after the common case fails.
 * Never throws: a key of the wrong type or a malformed signature is `false`.
 */
export const verifySignature = (key: KeyObject, sig: TpmtSignature, message: Uint8Array): boolean => {
  try {
    if (sig.alg === "ecdsa") {
      if (key.asymmetricKeyType !== "ec") return false
      const p1363 = ecdsaP1363(sig, curveSizeOf(key))
      return p1363 !== undefined && verify(sig.hash, message, { key, dsaEncoding: "ieee-p1363" }, p1363)
    }
    if (key.asymmetricKeyType !== "rsa") return false
    if (sig.alg === "rsassa") return verify(sig.hash, message, key, sig.sig) // PKCS#1 v1.5 is the default for RSA keys
    return (
      verify(sig.hash, message, { key, padding: cryptoConstants.RSA_PKCS1_PSS_PADDING, saltLength: digestSize(sig.hash) }, sig.sig) ||
      verify(sig.hash, message, { key, padding: cryptoConstants.RSA_PKCS1_PSS_PADDING, saltLength: cryptoConstants.RSA_PSS_SALTLEN_AUTO }, sig.sig)
    )
  } catch {
    return false
  }
}
