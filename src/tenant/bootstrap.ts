/**
 * The tenant's half of the bootstrap key exchange (keylime-wire.md §5, Keylime `tenant.py` and
 * `crypto.py`): K and V are 32 random bytes, U = K xor V; the payload is AES-256-GCM under K as
 * base64(IV(16) ‖ ciphertext ‖ tag(16)); `auth_tag` = hex HMAC-SHA384(K, agent id); U goes to the
 * agent RSA-OAEP(SHA-1, MGF1-SHA-1, no label)-encrypted with its NK, V to the verifier in base64
 * (the verifier encrypts it for the agent). Pure; K is kept for the `keys/verify` check.
 */
import { randomBytes } from "node:crypto"
import { Either } from "effect"
import { authTag, challengeHmac, encryptForAgent, encryptPayload, generateBootstrapKeys } from "../keys/index.js"
import { TenantError } from "./errors.js"

export interface Bootstrap {
  readonly k: Uint8Array
  readonly u: Uint8Array
  readonly v: Uint8Array
  /** POST keys/ukey body. */
  readonly ukey: { readonly auth_tag: string; readonly encrypted_key: string; readonly payload?: string }
  /** `v` of the verifier's creation body. */
  readonly vBase64: string
}

const b64 = (b: Uint8Array) => Buffer.from(b).toString("base64")

/** Fresh keys for one enrolment; `keys` only for tests that need fixed values. */
export const prepareBootstrap = (
  agentId: string,
  nkPublicPem: string,
  payload: Uint8Array | undefined,
  keys: { readonly k: Uint8Array; readonly u: Uint8Array; readonly v: Uint8Array } = generateBootstrapKeys(),
  iv?: Uint8Array
): Either.Either<Bootstrap, TenantError> =>
  Either.gen(function*() {
    const encryptedU = yield* Either.mapLeft(
      encryptForAgent(nkPublicPem, keys.u),
      (e) => new TenantError({ service: "agent", message: `agent ${agentId}: cannot encrypt U with its NK: ${e.message}` })
    )
    const encryptedPayload = payload === undefined
      ? undefined
      : yield* Either.mapLeft(encryptPayload(keys.k, payload, iv), (e) => new TenantError({ message: `payload: ${e.message}` }))
    return {
      ...keys,
      ukey: {
        auth_tag: authTag(keys.k, agentId),
        encrypted_key: b64(encryptedU),
        ...(encryptedPayload === undefined ? {} : { payload: b64(encryptedPayload) })
      },
      vBase64: b64(keys.v)
    }
  })

const ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

/** 20 random letters and digits: a nonce or `keys/verify` challenge (spec §4.3). */
export const randomChallenge = (n = 20): string => {
  const bytes = randomBytes(n * 2)
  let s = ""
  // rejection sampling: 248 = 4 × 62, so every character is equally likely
  for (let i = 0; i < bytes.length && s.length < n; i++) if (bytes[i]! < 248) s += ALNUM[bytes[i]! % 62]
  return s.length === n ? s : randomChallenge(n)
}

/** `keys/verify`: the agent's HMAC must be HMAC-SHA384(K, challenge) in hex. */
export const verifyHmac = (k: Uint8Array, challenge: string, hmac: string): boolean =>
  challengeHmac(k, challenge) === hmac.toLowerCase()
