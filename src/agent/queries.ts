/**
 * Query validation of the agent endpoints, in rust-keylime's order and with its texts
 * (push-model.md §4.3–4.5), plus spec §8's rule that nonces and challenges are 20 letters and
 * digits. Pure functions over the decoded query record.
 */
import { Either } from "effect"
import { type AgentRequestError, badRequest } from "./errors.js"

export type Query = Readonly<Record<string, string | undefined>>

const ALNUM = /^[A-Za-z0-9]*$/
const HEX = /^(?:0[xX])?[0-9a-fA-F]{1,8}$/
/** spec §8 */
export const NONCE_LENGTH = 20

export interface IntegrityQuery {
  readonly nonce: string
  readonly mask: number
  readonly partial: boolean
  readonly imaEntry: number
}

const missing = (field: string) => badRequest(`Query deserialize error: missing field \`${field}\``)

export const parseIntegrityQuery = (q: Query): Either.Either<IntegrityQuery, AgentRequestError> => {
  const { nonce, mask, partial } = q
  if (nonce === undefined) return Either.left(missing("nonce"))
  if (mask === undefined) return Either.left(missing("mask"))
  if (partial === undefined) return Either.left(missing("partial"))
  if (!ALNUM.test(nonce)) return Either.left(badRequest(`nonce should be strictly alphanumeric: ${nonce}`))
  if (!ALNUM.test(mask)) return Either.left(badRequest(`mask should be strictly alphanumeric: ${mask}`))
  if (!HEX.test(mask)) return Either.left(badRequest(`mask should be a hex encoded 32-bit integer: ${mask}`))
  if (nonce.length > 64) return Either.left(badRequest(`Nonce is too long (max size: 64): ${nonce.length}`))
  if (nonce.length !== NONCE_LENGTH) {
    return Either.left(badRequest(`Nonce should be ${NONCE_LENGTH} letters and digits, got ${nonce.length}: ${nonce}`))
  }
  if (partial !== "0" && partial !== "1") return Either.left(badRequest("uri must contain key 'partial' and value '0' or '1'"))
  // rust-keylime: an unparsable ima_ml_entry reads as 0
  const entry = q["ima_ml_entry"]
  const imaEntry = entry !== undefined && /^\d{1,9}$/.test(entry) ? Number(entry) : 0
  return Either.right({ nonce, mask: parseInt(mask.replace(/^0[xX]/, ""), 16) >>> 0, partial: partial === "1", imaEntry })
}

export const parseIdentityQuery = (q: Query): Either.Either<string, AgentRequestError> => {
  const { nonce } = q
  if (nonce === undefined) return Either.left(missing("nonce"))
  if (!ALNUM.test(nonce)) return Either.left(badRequest(`Parameters should be strictly alphanumeric: ${nonce}`))
  if (nonce.length > 64) return Either.left(badRequest(`Nonce is too long (max size 64): ${nonce}`))
  if (nonce.length !== NONCE_LENGTH) {
    return Either.left(badRequest(`Nonce should be ${NONCE_LENGTH} letters and digits, got ${nonce.length}: ${nonce}`))
  }
  return Either.right(nonce)
}

export const parseChallenge = (q: Query): Either.Either<string, AgentRequestError> => {
  const c = q["challenge"]
  if (c === undefined || c === "") return Either.left(badRequest("No challenge provided."))
  if (!ALNUM.test(c)) return Either.left(badRequest(`Parameters should be strictly alphanumeric: ${c}`))
  if (c.length !== NONCE_LENGTH) {
    return Either.left(badRequest(`Challenge should be ${NONCE_LENGTH} letters and digits, got ${c.length}: ${c}`))
  }
  return Either.right(c)
}

/** PCR indexes set in a mask, ascending. */
export const pcrsOfMask = (mask: number): Array<number> => {
  const out: Array<number> = []
  for (let i = 0; i < 24; i++) if ((mask >>> i) & 1) out.push(i)
  return out
}
