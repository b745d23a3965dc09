/**
 * The EAR's claims (draft-ietf-rats-ear, an EAT/RFC 9711 profile; the shape is in token.ts), their
 * schemas and the error of every EAR step. Portable: the verifying side (verify.ts) and the browser
 * page use them without node.
 */
import { Data, Either, Schema } from "effect"
import { toBase64Url, utf8Bytes } from "../crypto/encoding.js"
import { appraise, type EarStatus, type EarVerdict, TRUST_CLAIMS } from "./appraisal.js"

export const EAR_PROFILE = "tag:github.com,2023:veraison/ear"
/** What `Accept` asks for and a response carries (draft-ietf-rats-eat-media-type). */
export const EAR_MEDIA_TYPE = "application/eat+jwt"
/** attest's extension claim in each submod: the failure types (and messages) behind the status. */
export const FAILURES_CLAIM = "ear.attest.failures"

const Status = Schema.Literal("affirming", "warning", "contraindicated", "none")
const ClaimValue = Schema.Int.pipe(Schema.between(-128, 127))

export const EarAppraisal = Schema.Struct({
  "ear.status": Status,
  "ear.trustworthiness-vector": Schema.optional(Schema.partial(Schema.Struct(Object.fromEntries(TRUST_CLAIMS.map((c) => [c, ClaimValue])) as Record<(typeof TRUST_CLAIMS)[number], typeof ClaimValue>))),
  "ear.appraisal-policy-id": Schema.optional(Schema.String),
  [FAILURES_CLAIM]: Schema.optional(Schema.Array(Schema.Struct({ type: Schema.String, message: Schema.String })))
})
export type EarAppraisal = typeof EarAppraisal.Type

export const EarClaims = Schema.Struct({
  eat_profile: Schema.Literal(EAR_PROFILE),
  iat: Schema.Int,
  iss: Schema.optional(Schema.String),
  sub: Schema.optional(Schema.String),
  "ear.verifier-id": Schema.Struct({ build: Schema.String, developer: Schema.String }),
  eat_nonce: Schema.optional(Schema.String),
  submods: Schema.Record({ key: Schema.String, value: EarAppraisal })
})
export type EarClaims = typeof EarClaims.Type

export const Header = Schema.Struct({ alg: Schema.Literal("ES256"), typ: Schema.optional(Schema.String), kid: Schema.optional(Schema.String) })

// made once: building a decoder per token costs more than the signature check
export const decodeHeader = Schema.decodeUnknownEither(Schema.parseJson(Header))
export const decodeClaims = Schema.decodeUnknownEither(Schema.parseJson(EarClaims))

export class EarError extends Data.TaggedError("EarError")<{
  readonly reason: "nonce" | "malformed" | "unknown_key" | "signature" | "claims"
  readonly message: string
}> {}

export interface EarOptions {
  /** The verifier's `verifier_id` (the token's `iss`). */
  readonly verifierId?: string | undefined
  /** `ear.verifier-id.build`, e.g. "attest 0.1.0". */
  readonly build: string
}

export const b64url = (data: string | Uint8Array): string => toBase64Url(typeof data === "string" ? utf8Bytes(data) : data)

/** EAT nonces: text of 10-74 characters as is, bytes of 8-64 as base64url (RFC 9711 §4.1). */
export const eatNonce = (nonce: string | Uint8Array): Either.Either<string, EarError> => {
  if (typeof nonce === "string") {
    return nonce.length >= 10 && nonce.length <= 74
      ? Either.right(nonce)
      : Either.left(new EarError({ reason: "nonce", message: `eat_nonce: a text nonce must be 10-74 characters, got ${nonce.length}` }))
  }
  return nonce.length >= 8 && nonce.length <= 64
    ? Either.right(b64url(nonce))
    : Either.left(new EarError({ reason: "nonce", message: `eat_nonce: a byte nonce must be 8-64 bytes, got ${nonce.length}` }))
}

/** The claims of a verdict's EAR at `iat` (seconds). */
export const earClaims = (verdict: EarVerdict, options: EarOptions, iat: number): Either.Either<EarClaims, EarError> => {
  const nonce = verdict.nonce === undefined ? Either.right(undefined) : eatNonce(verdict.nonce)
  return Either.map(nonce, (eatNonceValue) => {
    const { status, vector } = appraise(verdict)
    const appraisal: EarAppraisal = {
      "ear.status": status,
      ...(Object.keys(vector).length > 0 ? { "ear.trustworthiness-vector": vector } : {}),
      ...(verdict.policyId === undefined ? {} : { "ear.appraisal-policy-id": verdict.policyId }),
      ...(verdict.failures.length === 0 ? {} : { [FAILURES_CLAIM]: verdict.failures.map((f) => ({ type: f.type, message: f.context.message })) })
    }
    return {
      eat_profile: EAR_PROFILE,
      iat: Math.floor(iat),
      ...(options.verifierId === undefined ? {} : { iss: options.verifierId }),
      sub: verdict.agentId,
      "ear.verifier-id": { build: options.build, developer: "attest" },
      ...(eatNonceValue === undefined ? {} : { eat_nonce: eatNonceValue }),
      submods: { [verdict.appraised.tee === true ? "tee" : "tpm"]: appraisal }
    }
  })
}

/** The status of the whole result: the worst of its submods'. */
export const overallStatus = (claims: EarClaims): EarStatus => {
  const order: ReadonlyArray<EarStatus> = ["affirming", "none", "warning", "contraindicated"]
  let worst: EarStatus = "affirming"
  for (const a of Object.values(claims.submods)) if (order.indexOf(a["ear.status"]) > order.indexOf(worst)) worst = a["ear.status"]
  return worst
}
