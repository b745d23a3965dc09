/**
 * Keylime bootstrap keys: K is split as U xor V (32 bytes each); the tenant proves it knows K with
 * auth_tag = hex HMAC-SHA384(key = K raw bytes, msg = agent id), and `keys/verify` answers
 * HMAC-SHA384(K, challenge). Pure functions, no throwing.
 */
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto"
import { Either } from "effect"
import { KeyError } from "./errors.js"

export const bootstrapKeyBytes = 32

/** Keylime accepts 16- or 32-byte U/V halves (AES-128 or AES-256 payload keys). */
export const isValidKeyLength = (n: number): boolean => n === 16 || n === 32

const hmacSha384 = (key: Uint8Array, msg: Uint8Array | string): Uint8Array =>
  new Uint8Array(createHmac("sha384", key).update(msg).digest())

export const xorKeys = (u: Uint8Array, v: Uint8Array): Either.Either<Uint8Array, KeyError> => {
  if (u.length !== v.length) {
    return Either.left(new KeyError({ reason: "length", message: `U and V differ in length (${u.length} and ${v.length} bytes)` }))
  }
  const k = new Uint8Array(u.length)
  for (let i = 0; i < u.length; i++) k[i] = u[i] ^ v[i]
  return Either.right(k)
}

/** Tenant side: a fresh K and V, and U = K xor V. */
export const generateBootstrapKeys = (bytes = bootstrapKeyBytes): { k: Uint8Array; u: Uint8Array; v: Uint8Array } => {
  const k = new Uint8Array(randomBytes(bytes))
  const v = new Uint8Array(randomBytes(bytes))
  const u = new Uint8Array(bytes)
  for (let i = 0; i < bytes; i++) u[i] = k[i] ^ v[i]
  return { k, u, v }
}

/** auth_tag sent with U: hex HMAC-SHA384(K, agent id). */
export const authTag = (k: Uint8Array, agentId: string): string => Buffer.from(hmacSha384(k, agentId)).toString("hex")

/** Parses an auth_tag as the agent does: hex, 48 bytes (SHA-384). */
export const decodeAuthTag = (hex: string): Either.Either<Uint8Array, KeyError> => {
  if (!/^(?:[0-9a-fA-F]{2})*$/.test(hex)) {
    return Either.left(new KeyError({ reason: "encoding", message: `Invalid hex encoding in auth_tag: ${hex}` }))
  }
  const bytes = new Uint8Array(Buffer.from(hex, "hex"))
  if (bytes.length !== 48) {
    return Either.left(new KeyError({ reason: "length", message: `Invalid auth_tag length: ${bytes.length} bytes, expected 48` }))
  }
  return Either.right(bytes)
}

/** Constant-time check of an auth_tag against K. */
export const checkAuthTag = (k: Uint8Array, agentId: string, tag: Uint8Array): boolean => {
  const expected = hmacSha384(k, agentId)
  return tag.length === expected.length && timingSafeEqual(expected, tag)
}

/** `keys/verify`: hex HMAC-SHA384(K, challenge). */
export const challengeHmac = (k: Uint8Array, challenge: string): string =>
  Buffer.from(hmacSha384(k, challenge)).toString("hex")

/**
 * First K = U xor V whose auth_tag matches, over every (U, V) pair received so far (Keylime's
 * `try_combine_keys`: a retried ukey/vkey may leave several candidates).
 */
export const combineKeys = (
  us: ReadonlyArray<Uint8Array>,
  vs: ReadonlyArray<Uint8Array>,
  agentId: string,
  tag: Uint8Array
): Either.Either<Uint8Array, KeyError> => {
  for (const u of us) {
    for (const v of vs) {
      if (u.length !== v.length) continue
      const k = Either.getOrThrow(xorKeys(u, v))
      if (checkAuthTag(k, agentId, tag)) return Either.right(k)
    }
  }
  return Either.left(new KeyError({ reason: "auth_tag", message: "auth_tag does not match any U xor V" }))
}

/**
 * Registrar activation: auth_tag = hex HMAC-SHA384(key = base64 text of the secret recovered by
 * ActivateCredential, msg = agent id). Keylime keys the HMAC with the base64 *text*, not the bytes.
 */
export const activationAuthTag = (secret: Uint8Array, agentId: string): string =>
  Buffer.from(hmacSha384(new Uint8Array(Buffer.from(Buffer.from(secret).toString("base64"), "ascii")), agentId)).toString("hex")
