/**
 * The failures the evaluator itself raises, with Keylime's event ids (keylime-wire.md §3.4, its
 * `qoute_validation` spelling included) and contexts: Keylime's keys (`message`, `data`, `error`,
 * `got`, `expected`) so `verify/identity`'s reason text and notifications read the same, plus a
 * `message` wherever Keylime's context has none. IMA and measured-boot failures come from their engines.
 */
import { type Failure, makeFailure } from "../../../schemas/Evidence.js"

export const VerifierFailureType = {
  invalidQuote: "qoute_validation.invalid_quote",
  quoteValidation: "qoute_validation.quote_validation",
  noPubkey: "qoute_validation.no_pubkey",
  invalidHashAlg: "qoute_validation.invalid_hash_alg",
  invalidEncAlg: "qoute_validation.invalid_enc_alg",
  invalidSignAlg: "qoute_validation.invalid_sign_alg",
  invalidPcr: (pcr: number) => `pcr_validation.invalid_pcr_${pcr}`,
  missingPcr16: "pcr_validation.missing_pcr_16",
  missingPcrs: "pcr_validation.missing_pcrs",
  unusedPcr: (pcr: number) => `pcr_validation.unused_pcr_${pcr}`,
  missingParam: "default.missing_param",
  missingPolicy: "default.missing_policy",
  invalidParam: "default.invalid_param",
  teeMissingParam: "tee_attestation.missing_param",
  teeInvalid: "tee_attestation.invalid.tee"
} as const

/** The text Keylime gives a nonce mismatch (its identity/evidence answers carry it verbatim). */
export const NONCE_MISMATCH = "The nonce from the attestation differs from the expected nonce"

/** Signature, nonce, digest, selection or parse failure of the quote; `error` says which check failed. */
export const quoteValidation = (error: string): Failure =>
  makeFailure(VerifierFailureType.quoteValidation, "Quote data validation", { error })

/** The quote string is not `r<b64>:<b64>:<b64>` (Keylime raises before its check and reports this). */
export const invalidQuote = (reason: string): Failure => makeFailure(VerifierFailureType.invalidQuote, `Quote validation failed: ${reason}`)

export const clockValidation = (reason: string): Failure =>
  makeFailure(VerifierFailureType.quoteValidation, "Validation of clockinfo from quote using tpm2-tools", { data: reason })

export const noPubkey = (): Failure =>
  makeFailure(VerifierFailureType.noPubkey, "agent did not provide public key and no key or encrypted_v was cached at CV", { data: null })

export const unrecognizedHashAlg = (hashAlg: string | undefined): Failure =>
  makeFailure(VerifierFailureType.invalidHashAlg, `TPM Quote is using an unrecognized hash algorithm: ${hashAlg ?? "None"}`, { data: hashAlg ?? null })

export const unacceptedAlg = (kind: "hash" | "encryption" | "signing", alg: string | undefined): Failure =>
  makeFailure(
    kind === "hash" ? VerifierFailureType.invalidHashAlg : kind === "encryption" ? VerifierFailureType.invalidEncAlg : VerifierFailureType.invalidSignAlg,
    `TPM Quote is using an unaccepted ${kind} algorithm: ${alg ?? "None"}`,
    { data: alg ?? null }
  )

export const invalidPcr16 = (got: string, expected: string): Failure =>
  makeFailure(VerifierFailureType.invalidPcr(16), "PCR 16 does not hold the digest of the agent's NK public key", { got, expected })

export const missingPcr16 = (): Failure => makeFailure(VerifierFailureType.missingPcr16, "Data PCR 16 is missing in quote, but is required")

// Keylime words these PCR failures under `context.context`; attest keeps its `message` beside it
const PCR_NOT_ALLOWED = "PCR value is not in allowlist"
const PCRS_MISSING = "PCRs are missing in quote"

export const pcrNotAllowed = (pcr: number, got: string, expected: ReadonlySet<string>): Failure =>
  makeFailure(VerifierFailureType.invalidPcr(pcr), PCR_NOT_ALLOWED, { context: PCR_NOT_ALLOWED, got, expected: [...expected] })

export const missingPcrs = (pcrs: ReadonlyArray<number>): Failure =>
  makeFailure(VerifierFailureType.missingPcrs, PCRS_MISSING, { context: PCRS_MISSING, data: pcrs })

export const unusedImaPcr = (): Failure => makeFailure(VerifierFailureType.unusedPcr(10), "IMA PCR in policy, but no measurement list provided")

export const unusedBootPcr = (pcr: number): Failure =>
  makeFailure(VerifierFailureType.unusedPcr(pcr), `Measured Boot PCR ${pcr} in policy, but no measurement list provided`)
