/**
 * A relying party's check of an EAR: the JWS signature with `jose` (its ES256 verification and key
 * import, where JOSE's edge cases live), then the claims decoded with the EAR schema. Before jose
 * sees the token, attest keeps its own stricter rules: three canonical base64url segments (a stray
 * bit in a last character is a changed token), a header that says ES256, the key the header's `kid`
 * names (any given key when it names none). Portable: jose runs on WebCrypto everywhere.
 */
import { Effect, Either } from "effect"
import { compactVerify, errors, importJWK } from "jose"
import { base64Bytes, toBase64Url, utf8 } from "../crypto/encoding.js"
import { decodeClaims, decodeHeader, type EarClaims, EarError } from "./claims.js"
import type { EarVerificationKey } from "./jwks.js"

export interface VerifiedEar {
  readonly kid: string
  readonly claims: EarClaims
}

const B64URL = /^[A-Za-z0-9_-]*$/

/** Canonical base64url only: a segment that re-encodes differently (stray bits in its last character) is refused. */
const decodeSegment = (segment: string, what: string): Either.Either<Uint8Array, EarError> => {
  const bytes = B64URL.test(segment) ? base64Bytes(segment) : undefined
  return bytes !== undefined && toBase64Url(bytes) === segment
    ? Either.right(bytes)
    : Either.left(new EarError({ reason: "malformed", message: `the token's ${what} is not canonical base64url` }))
}

type JoseKey = Awaited<ReturnType<typeof importJWK>>

// One import per key object: the verifier's few keys are checked over and over.
const imported = new WeakMap<EarVerificationKey, Promise<JoseKey>>()
const joseKey = (k: EarVerificationKey): Promise<JoseKey> => {
  let p = imported.get(k)
  if (p === undefined) {
    p = importJWK({ ...k.jwk }, "ES256")
    imported.set(k, p)
  }
  return p
}

/** The token's structure, header and candidate keys, checked before any signature. */
const readToken = (token: string, keys: ReadonlyArray<EarVerificationKey>) =>
  Either.gen(function*() {
    const parts = token.trim().split(".")
    if (parts.length !== 3) return yield* Either.left(new EarError({ reason: "malformed", message: `a JWT has 3 dot-separated parts, this token has ${parts.length}` }))
    const [h, p, s] = parts as [string, string, string]
    const headerBytes = yield* decodeSegment(h, "header")
    yield* decodeSegment(p, "payload")
    const signature = yield* decodeSegment(s, "signature")
    const header = yield* Either.mapLeft(
      decodeHeader(utf8(headerBytes)),
      () => new EarError({ reason: "malformed", message: "the token's header is not a JSON object with alg ES256" })
    )
    const candidates = header.kid === undefined ? keys : keys.filter((k) => k.kid === header.kid)
    if (candidates.length === 0) {
      return yield* Either.left(new EarError({ reason: "unknown_key", message: `no key with kid ${header.kid} among the ${keys.length} given` }))
    }
    if (signature.length !== 64) return yield* Either.left(new EarError({ reason: "signature", message: `an ES256 signature is 64 bytes, got ${signature.length}` }))
    return { compact: `${h}.${p}.${s}`, candidates }
  })

/** The first candidate whose key verifies the token, with the payload jose returns; a token jose refuses outright is malformed. */
const joseVerify = async (compact: string, candidates: ReadonlyArray<EarVerificationKey>): Promise<{ readonly by: EarVerificationKey; readonly payload: Uint8Array } | EarError> => {
  for (const k of candidates) {
    try {
      const r = await compactVerify(compact, await joseKey(k), { algorithms: ["ES256"] })
      return { by: k, payload: r.payload }
    } catch (e) {
      if (e instanceof errors.JWSSignatureVerificationFailed) continue
      return new EarError({ reason: e instanceof errors.JOSEError && e.code === "ERR_JWK_INVALID" ? "unknown_key" : "malformed", message: `jose refused the token: ${e instanceof Error ? e.message : String(e)}` })
    }
  }
  return new EarError({ reason: "signature", message: "the signature does not verify with the key" })
}

/** The check as a Promise of its verdict (one promise chain: the token's checks are cheap beside jose's). */
export const verifyEarPromise = async (token: string, keys: ReadonlyArray<EarVerificationKey>): Promise<Either.Either<VerifiedEar, EarError>> => {
  const read = readToken(token, keys)
  if (Either.isLeft(read)) return Either.left(read.left)
  let verified: Awaited<ReturnType<typeof joseVerify>>
  try {
    verified = await joseVerify(read.right.compact, read.right.candidates)
  } catch (e) {
    verified = new EarError({ reason: "malformed", message: `the token could not be checked: ${e instanceof Error ? e.message : String(e)}` })
  }
  if (verified instanceof EarError) return Either.left(verified)
  const by = verified.by
  return Either.mapBoth(decodeClaims(utf8(verified.payload)), {
    onLeft: (e) => new EarError({ reason: "claims", message: `the claims are not an EAR: ${e.message.split("\n").slice(0, 3).join(" ")}` }),
    onRight: (claims) => ({ kid: by.kid, claims })
  })
}

/** Checks the signature and decodes the claims. */
export const verifyEar = (token: string, keys: ReadonlyArray<EarVerificationKey>): Effect.Effect<VerifiedEar, EarError> =>
  // verifyEarPromise never rejects: every failure is a Left
  Effect.flatten(Effect.promise(() => verifyEarPromise(token, keys)))
