/**
 * GET verify/identity (spec §4.1, keylime-wire.md §1.4): does this quote over this nonce come from
 * the agent's stored AK? Only the hash algorithm, the signature, the nonce and the PCR digest are
 * checked; PCR 16, the clock and the policies are not (Keylime skips them here too). The agent
 * lookup (404 "agent id not found") is the HTTP layer's, between the two functions.
 */
import { Data, Either } from "effect"
import type { Failure, VerifyIdentityQuery, VerifyIdentityResult } from "../../../schemas/Evidence.js"
import type { TpmtPublic } from "../../tpm/public.js"
import { recognizedHash } from "../../attestation/evaluate/algorithms.js"
import { unrecognizedHashAlg } from "../../attestation/evaluate/failures.js"
import { checkQuote } from "../../attestation/evaluate/quote.js"
import { pythonJsonDumps } from "../../attestation/pythonJson.js"

const PARAMETERS = ["agent_uuid", "quote", "nonce", "hash_alg"] as const
export type IdentityParameter = (typeof PARAMETERS)[number]

/** A required query parameter is absent or empty: 400 with the reference's text. */
export class IdentityParameterMissing extends Data.TaggedError("IdentityParameterMissing")<{ readonly name: IdentityParameter }> {
  override get message(): string {
    return `missing query parameter '${this.name}'`
  }
}

export interface IdentityRequest {
  readonly agent_uuid: string
  readonly quote: string
  readonly nonce: string
  readonly hash_alg: string
}

/** The query → the request, or the first missing parameter in Keylime's order. */
export const parseIdentityQuery = (query: VerifyIdentityQuery): Either.Either<IdentityRequest, IdentityParameterMissing> => {
  for (const name of PARAMETERS) {
    const v = query[name]
    if (v === undefined || v === "") return Either.left(new IdentityParameterMissing({ name }))
  }
  return Either.right({ agent_uuid: query.agent_uuid!, quote: query.quote!, nonce: query.nonce!, hash_alg: query.hash_alg! })
}

/** The failures of the identity check: none when the quote is the AK's over the nonce. */
export const identityFailures = (ak: Uint8Array | TpmtPublic, req: IdentityRequest): ReadonlyArray<Failure> => {
  const hash = recognizedHash(req.hash_alg)
  if (hash === undefined) return [unrecognizedHashAlg(req.hash_alg)]
  const q = checkQuote(ak, req.quote, new Uint8Array(Buffer.from(req.nonce, "utf8")), hash, undefined)
  return Either.isLeft(q) ? [q.left] : []
}

/** `{valid: 1}`, or `{valid: 0, reason}`: the contexts as Python writes JSON, joined with "; " (a string, as Keylime). */
export const verifyIdentity = (ak: Uint8Array | TpmtPublic, req: IdentityRequest): VerifyIdentityResult => {
  const failures = identityFailures(ak, req)
  return failures.length === 0 ? { valid: 1 } : { valid: 0, reason: failures.map((f) => pythonJsonDumps(f.context)).join("; ") }
}
