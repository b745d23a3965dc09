/**
 * EAR tokens (draft-ietf-rats-ear, an EAT/RFC 9711 profile) as JWTs signed ES256 with node:crypto:
 *
 *   header  {"alg":"ES256","typ":"JWT","kid":<RFC 7638 thumbprint>}
 *   claims  {
 *     "eat_profile": "tag:github.com,2023:veraison/ear",
 *     "iat": <seconds>, "iss": <verifier_id>, "sub": <agent id>,
 *     "ear.verifier-id": {"build": "attest <version>", "developer": "attest"},
 *     "eat_nonce": <the nonce, when the evidence answered one>,
 *     "submods": {"tpm" | "tee": {
 *        "ear.status": "affirming" | "warning" | "contraindicated" | "none",
 *        "ear.trustworthiness-vector": {"instance-identity": 2, "executables": 2, "hardware": 2, …},
 *        "ear.appraisal-policy-id": <policy>,                    (when known)
 *        "ear.attest.failures": [{"type": …, "message": …}]      (attest's failure types, when any)
 *     }}
 *   }
 *
 * `issueEar(verdict, key, options)` signs at Clock time; `signEar` takes the time (benches).
 * `verifyEar(token, keys)` checks the signature with the key the header names (or any given key
 * when it names none) and decodes the claims; every byte matters: a changed header, claim or
 * signature fails. The appraisal rules are src/ear/appraisal.ts.
 */
import { Clock, Data, Effect, Either, Schema } from "effect"
import * as crypto from "node:crypto"
import { appraise, type EarStatus, type EarVerdict, TRUST_CLAIMS } from "./appraisal.js"
import type { EarSigningKey, EarVerificationKey } from "./key.js"

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

const Header = Schema.Struct({ alg: Schema.Literal("ES256"), typ: Schema.optional(Schema.String), kid: Schema.optional(Schema.String) })

// made once: building a decoder per token costs more than the signature check
const decodeHeader = Schema.decodeUnknownEither(Schema.parseJson(Header))
const decodeClaims = Schema.decodeUnknownEither(Schema.parseJson(EarClaims))

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

const b64url = (data: string | Uint8Array): string => Buffer.from(data).toString("base64url")

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

/** The compact JWS of the claims (ES256, raw r‖s signature). */
export const signClaims = (claims: EarClaims, key: EarSigningKey): string => {
  const signingInput = `${b64url(JSON.stringify({ alg: "ES256", typ: "JWT", kid: key.kid }))}.${b64url(JSON.stringify(claims))}`
  const signature = crypto.sign("sha256", Buffer.from(signingInput), { key: key.privateKey, dsaEncoding: "ieee-p1363" })
  return `${signingInput}.${b64url(signature)}`
}

/** The EAR of a verdict issued at `iat` (seconds since the epoch). */
export const signEar = (verdict: EarVerdict, key: EarSigningKey, options: EarOptions, iat: number): Either.Either<string, EarError> =>
  Either.map(earClaims(verdict, options, iat), (claims) => signClaims(claims, key))

/** The EAR of a verdict, issued now (Clock). */
export const issueEar = (verdict: EarVerdict, key: EarSigningKey, options: EarOptions): Effect.Effect<string, EarError> =>
  Effect.flatMap(Clock.currentTimeMillis, (now) => signEar(verdict, key, options, Math.floor(now / 1000)))

const B64URL = /^[A-Za-z0-9_-]*$/

/** Canonical base64url only: a segment that re-encodes differently (stray bits in its last character) is refused. */
const decodeSegment = (segment: string, what: string): Either.Either<Buffer, EarError> => {
  const bytes = B64URL.test(segment) ? Buffer.from(segment, "base64url") : undefined
  return bytes !== undefined && bytes.toString("base64url") === segment
    ? Either.right(bytes)
    : Either.left(new EarError({ reason: "malformed", message: `the token's ${what} is not canonical base64url` }))
}

export interface VerifiedEar {
  readonly kid: string
  readonly claims: EarClaims
}

/** Checks the signature and decodes the claims. */
export const verifyEar = (token: string, keys: ReadonlyArray<EarVerificationKey>): Either.Either<VerifiedEar, EarError> =>
  Either.gen(function*() {
    const parts = token.trim().split(".")
    if (parts.length !== 3) return yield* Either.left(new EarError({ reason: "malformed", message: `a JWT has 3 dot-separated parts, this token has ${parts.length}` }))
    const [h, p, s] = parts as [string, string, string]
    const headerBytes = yield* decodeSegment(h, "header")
    const payloadBytes = yield* decodeSegment(p, "payload")
    const signature = yield* decodeSegment(s, "signature")
    const header = yield* Either.mapLeft(
      decodeHeader(headerBytes.toString("utf8")),
      () => new EarError({ reason: "malformed", message: "the token's header is not a JSON object with alg ES256" })
    )
    const candidates = header.kid === undefined ? keys : keys.filter((k) => k.kid === header.kid)
    if (candidates.length === 0) {
      return yield* Either.left(new EarError({ reason: "unknown_key", message: `no key with kid ${header.kid} among the ${keys.length} given` }))
    }
    if (signature.length !== 64) return yield* Either.left(new EarError({ reason: "signature", message: `an ES256 signature is 64 bytes, got ${signature.length}` }))
    const signed = Buffer.from(`${h}.${p}`)
    const by = candidates.find((k) => crypto.verify("sha256", signed, { key: k.key, dsaEncoding: "ieee-p1363" }, signature))
    if (by === undefined) return yield* Either.left(new EarError({ reason: "signature", message: "the signature does not verify with the key" }))
    const claims = yield* Either.mapLeft(
      decodeClaims(payloadBytes.toString("utf8")),
      (e) => new EarError({ reason: "claims", message: `the claims are not an EAR: ${e.message.split("\n").slice(0, 3).join(" ")}` })
    )
    return { kid: by.kid, claims }
  })

/** The status of the whole result: the worst of its submods'. */
export const overallStatus = (claims: EarClaims): EarStatus => {
  const order: ReadonlyArray<EarStatus> = ["affirming", "none", "warning", "contraindicated"]
  let worst: EarStatus = "affirming"
  for (const a of Object.values(claims.submods)) if (order.indexOf(a["ear.status"]) > order.indexOf(worst)) worst = a["ear.status"]
  return worst
}
