/** Typed failures of the TPM structure codecs and verifiers. */
import { Data } from "effect"

/** A TPM structure could not be parsed: which structure, at which byte offset, why. */
export class TpmParseError extends Data.TaggedError("TpmParseError")<{
  readonly structure: string
  readonly offset: number
  readonly message: string
}> {}

export type QuoteCheck =
  | "parse"
  | "magic"
  | "type"
  | "nonce"
  | "signature"
  | "pcr_digest"
  | "pcr_selection"
  | "hash_alg"
  | "scheme"
  | "key"
  | "name"

/** A quote or certify failed verification; `check` says which check. */
export class QuoteVerifyError extends Data.TaggedError("QuoteVerifyError")<{
  readonly check: QuoteCheck
  readonly message: string
}> {}

/** MakeCredential / ActivateCredential failures. */
export class CredentialError extends Data.TaggedError("CredentialError")<{
  readonly reason: "parse" | "key" | "integrity" | "decrypt" | "crypto"
  readonly message: string
}> {}

/** An EK certificate could not be parsed or does not fit the EK. */
export class EkCertificateError extends Data.TaggedError("EkCertificateError")<{
  readonly reason: "parse" | "key" | "mismatch"
  readonly message: string
}> {}
