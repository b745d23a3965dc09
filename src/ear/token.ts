/**
 * EAR tokens (draft-ietf-rats-ear, an EAT/RFC 9711 profile) as JWTs signed ES256:
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
 * `issueEar(verdict, key, options)` signs at Clock time; `signEar` takes the time (benches): signing
 * stays on node:crypto. `verifyEar(token, keys)` (verify.ts, with `jose`; portable) checks the
 * signature with the key the header names (or any given key when it names none) and decodes the
 * claims; every byte matters: a changed header, claim or signature fails. The claims and their
 * schemas are claims.ts; the appraisal rules are src/ear/appraisal.ts.
 */
import { Clock, Effect, Either } from "effect"
import * as crypto from "node:crypto"
import { b64url, type EarClaims, type EarError, earClaims, type EarOptions } from "./claims.js"
import type { EarVerdict } from "./appraisal.js"
import type { EarSigningKey } from "./key.js"

export * from "./claims.js"
export { type VerifiedEar, verifyEar } from "./verify.js"

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

