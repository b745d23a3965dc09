/**
 * The quote step: the Keylime quote string verified with the AK (signature, magic and type, nonce,
 * PCR selection and digest, signature hash = hash_alg, scheme = sign_alg) by src/tpm; its failures
 * become `qoute_validation.*` failures whose `error` says which check failed.
 */
import { Either } from "effect"
import type { Failure } from "../../../schemas/Evidence.js"
import type { QuoteVerifyError } from "../../tpm/errors.js"
import type { TpmtPublic } from "../../tpm/public.js"
import type { HashAlg, SignScheme } from "../../tpm/Tpm.js"
import { type VerifiedQuote, verifyQuoteString } from "../../tpm/verifyQuote.js"
import { invalidQuote, NONCE_MISMATCH, quoteValidation } from "./failures.js"

const R = 114 // "r": raw parts, the only form attest (and Keylime since API 2.0) reads
const COLON = 58

/** `r<b64>:<b64>:<b64>`: Keylime raises on anything else before it verifies, which it reports as invalid_quote. */
const shapeError = (quote: string): string | undefined => {
  if (quote.length === 0 || quote.charCodeAt(0) !== R) return `quote must start with "r" (raw parts)`
  const c1 = quote.indexOf(":", 1)
  const c2 = c1 < 0 ? -1 : quote.indexOf(":", c1 + 1)
  if (c2 < 0 || quote.indexOf(":", c2 + 1) >= 0 || quote.charCodeAt(quote.length - 1) === COLON) {
    return "quote must have three ':'-separated parts (TPMS_ATTEST, TPMT_SIGNATURE, PCR blob)"
  }
  return undefined
}

const errorText = (e: QuoteVerifyError): string => {
  switch (e.check) {
    case "nonce":
      return NONCE_MISMATCH
    case "key":
      return `the AK cannot verify quotes: ${e.message}`
    default:
      return `${e.check}: ${e.message}`
  }
}

export const checkQuote = (
  ak: Uint8Array | TpmtPublic,
  quote: string,
  nonce: Uint8Array,
  hashAlg: HashAlg,
  scheme: SignScheme | undefined
): Either.Either<VerifiedQuote, Failure> => {
  const shape = shapeError(quote)
  if (shape !== undefined) return Either.left(invalidQuote(shape))
  const verified = verifyQuoteString(ak, quote, nonce, scheme === undefined ? { hashAlg } : { hashAlg, scheme })
  return Either.mapLeft(verified, (e) => quoteValidation(errorText(e)))
}
