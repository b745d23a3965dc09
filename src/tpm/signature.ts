/**
 * TPMT_SIGNATURE (Part 2 §11.3.4) for RSASSA, RSAPSS and ECDSA, and its verification through the
 * crypto port (src/crypto). ECDAA and EC-Schnorr signatures parse to a clear error: they need the TPM's
 * anonymous/Schnorr verification, which attestation does not use.
 */
import { Either } from "effect"
import { cryptoPort } from "../crypto/active.js"
import { CURVE_SIZES, type PublicKey, type SignatureScheme } from "../crypto/port.js"
import { parseWhole, type Reader, Writer } from "./bytes.js"
import { TPM_ALG } from "./constants.js"
import type { TpmParseError } from "./errors.js"
import { algIdOf, hashAlgFromId, type HashAlg } from "./hashAlg.js"

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
 * own verification does, tried only after the common case fails. Never throws: a key of the wrong type or a malformed signature is `false`.
 */
export const verifySignature = (key: PublicKey, sig: TpmtSignature, message: Uint8Array): boolean => {
  const port = cryptoPort()
  if (sig.alg === "ecdsa") {
    if (key.type !== "ec") return false
    const p1363 = ecdsaP1363(sig, CURVE_SIZES[key.curve])
    return p1363 !== undefined && port.verify(key, SCHEMES.ecdsa[sig.hash], message, p1363)
  }
  if (key.type !== "rsa") return false
  return port.verify(key, SCHEMES[sig.alg][sig.hash], message, sig.sig)
}

const perHash = <S extends SignatureScheme>(f: (hash: HashAlg) => S): Readonly<Record<HashAlg, S>> =>
  ({ sha1: f("sha1"), sha256: f("sha256"), sha384: f("sha384"), sha512: f("sha512") })

// made once: the quote loop passes them on every check
const SCHEMES = {
  ecdsa: perHash((hash) => ({ alg: "ecdsa", hash, encoding: "p1363" }) as const),
  rsassa: perHash((hash) => ({ alg: "rsa-pkcs1", hash }) as const),
  // TPMs use salt length = digest length; any other is accepted as the TPM's own verification does
  rsapss: perHash((hash) => ({ alg: "rsa-pss", hash, saltLength: "any" }) as const)
}
