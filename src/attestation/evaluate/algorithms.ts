/**
 * The algorithm gates of Keylime's `process_quote_response` (keylime-wire.md §6): hash_alg must be
 * a known hash and in `accept_tpm_hash_algs`, enc_alg in `accept_tpm_encryption_algs` (where `rsa`
 * stands for `rsa2048` and `ecc` for `ecc256`, so API 2.5's `rsa2048` passes an old `rsa` entry),
 * sign_alg in `accept_tpm_signing_algs`. Checked in that order; the first refusal ends the check.
 */
import type { Failure } from "../../../schemas/Evidence.js"
import type { HashAlg, SignScheme } from "../../tpm/Tpm.js"
import { quoteValidation, unacceptedAlg, unrecognizedHashAlg } from "./failures.js"
import type { AcceptedAlgorithms } from "./types.js"

/** Hash names as the agent and Keylime write them (exact, lower case). Keylime's sm3_256 is not verifiable here. */
export const recognizedHash = (name: string | undefined): HashAlg | undefined =>
  name === "sha256" || name === "sha1" || name === "sha384" || name === "sha512" ? name : undefined

const normalizeEnc = (alg: string): string => (alg === "rsa" ? "rsa2048" : alg === "ecc" ? "ecc256" : alg)

/** Keylime `algorithms.is_accepted`: a direct match, or the same key type and size after normalisation. */
export const isAccepted = (alg: string, accepted: ReadonlyArray<string>): boolean => {
  if (accepted.includes(alg)) return true
  const n = normalizeEnc(alg)
  for (const a of accepted) if (normalizeEnc(a) === n) return true
  return false
}

const verifiableScheme = (alg: string): SignScheme | undefined =>
  alg === "rsassa" || alg === "rsapss" || alg === "ecdsa" ? alg : undefined

export interface GatedAlgorithms {
  readonly hash: HashAlg
  /** The signature scheme the quote must use, when the agent named one. */
  readonly scheme: SignScheme | undefined
}

/**
 * Gates the evidence's algorithms. Without `accept` (verify/evidence, identity) only the hash is
 * checked, with Keylime's "unrecognized" wording. A sign_alg attest cannot verify (ecschnorr, ecdaa)
 * is refused even when accepted: the quote's signature could not be checked.
 */
export const gateAlgorithms = (
  hashAlg: string | undefined,
  encAlg: string | undefined,
  signAlg: string | undefined,
  accept: AcceptedAlgorithms | undefined
): GatedAlgorithms | Failure => {
  const hash = recognizedHash(hashAlg)
  if (accept === undefined) return hash === undefined ? unrecognizedHashAlg(hashAlg) : { hash, scheme: undefined }
  if (hash === undefined || !isAccepted(hash, accept.hash)) return unacceptedAlg("hash", hashAlg)
  if (encAlg === undefined || encAlg === "" || !isAccepted(encAlg, accept.encryption)) return unacceptedAlg("encryption", encAlg)
  if (signAlg === undefined || signAlg === "" || !isAccepted(signAlg, accept.signing)) return unacceptedAlg("signing", signAlg)
  const scheme = verifiableScheme(signAlg)
  if (scheme === undefined) return quoteValidation(`signing algorithm ${signAlg} cannot be verified (rsassa, rsapss and ecdsa can)`)
  return { hash, scheme }
}
