/**
 * The verifier's EAR keys as a relying party holds them: ES256 public JWKs with their key ids, read
 * from a JWKS document (RFC 7517). Portable (the browser page reads the verifier's JWKS with it); the
 * signing key and its files are key.ts.
 */
import { Either, Schema } from "effect"
import { cryptoPort } from "../crypto/active.js"
import { base64Bytes, concat, toBase64Url, utf8Bytes } from "../crypto/encoding.js"
import { pointOf } from "../crypto/noble.js"

export interface EcPublicJwk {
  readonly kty: "EC"
  readonly crv: "P-256"
  readonly x: string
  readonly y: string
}

/** A public verification key with its id, as a relying party holds it. */
export interface EarVerificationKey {
  readonly kid: string
  readonly jwk: EcPublicJwk
}

export const JWKS_CONTENT_TYPE = "application/jwk-set+json"

/** RFC 7638: SHA-256 over the required members in lexicographic order, no whitespace. */
export const thumbprint = (jwk: EcPublicJwk): string =>
  toBase64Url(cryptoPort().digest("sha256", utf8Bytes(JSON.stringify({ crv: jwk.crv, kty: jwk.kty, x: jwk.x, y: jwk.y }))))

const B64URL = /^[A-Za-z0-9_-]+$/

/** Why (x, y) is not a P-256 point, or undefined. */
export const p256PointProblem = (jwk: EcPublicJwk): string | undefined => {
  if (!B64URL.test(jwk.x) || !B64URL.test(jwk.y)) return "x and y must be base64url"
  const x = base64Bytes(jwk.x)
  const y = base64Bytes(jwk.y)
  if (x.length !== 32 || y.length !== 32) return `x and y must be 32 bytes, got ${x.length} and ${y.length}`
  return pointOf("P-256", concat(Uint8Array.of(4), x, y)) === undefined ? "the point is not on the curve" : undefined
}

const JwkSet = Schema.parseJson(Schema.Struct({
  keys: Schema.Array(Schema.Struct({ kty: Schema.String, crv: Schema.optional(Schema.String), x: Schema.optional(Schema.String), y: Schema.optional(Schema.String), kid: Schema.optional(Schema.String) }))
}))

/** The ES256 keys of a JWKS document (other keys are skipped), or why the text is not one. */
export const keysFromJwks = (text: string): Either.Either<ReadonlyArray<EarVerificationKey>, string> =>
  Either.flatMap(Either.mapLeft(Schema.decodeUnknownEither(JwkSet)(text), (e) => `not a JWKS document: ${e.message.split("\n")[0]}`), (set) => {
    const keys: Array<EarVerificationKey> = []
    for (const jwk of set.keys) {
      if (jwk.kty !== "EC" || jwk.crv !== "P-256" || jwk.x === undefined || jwk.y === undefined) continue
      const publicJwk: EcPublicJwk = { kty: "EC", crv: "P-256", x: jwk.x, y: jwk.y }
      const problem = p256PointProblem(publicJwk)
      if (problem !== undefined) return Either.left(`key ${jwk.kid ?? "(no kid)"} is not a P-256 point: ${problem}`)
      keys.push({ kid: jwk.kid ?? thumbprint(publicJwk), jwk: publicJwk })
    }
    return keys.length === 0 ? Either.left("holds no P-256 (ES256) key") : Either.right(keys)
  })
