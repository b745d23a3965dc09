/**
 * Session challenges the verifier recognises without storing them (issue 22: POST /v3/sessions
 * stores nothing, so no one can fill the store or spend an agent's budget by asking for sessions
 * in its name). A session id is a UUIDv7 (RFC 9562 §5.7): its first 48 bits are the time it was
 * made (epoch ms), the rest random. Its challenge is the first 16 bytes of HMAC-SHA256 under the
 * verifier's key (stored once in the database, so every process sharing it agrees) over the
 * session id and the agent id: unpredictable without the key, fresh with every id, and tied to the
 * agent it was asked for. A proof is accepted once (the proved session is stored under its id).
 */
import * as crypto from "node:crypto"

/** A UUIDv7 as this verifier writes it: lower-case hex, version 7, RFC 9562 variant. */
const SESSION_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

/** A new session id made at `now` (epoch ms). */
export const newSessionId = (now: number): string => {
  const b = crypto.randomBytes(16)
  b.writeUIntBE(Math.max(0, Math.min(now, 2 ** 48 - 1)), 0, 6)
  b[6] = (b[6]! & 0x0f) | 0x70
  b[8] = (b[8]! & 0x3f) | 0x80
  const h = b.toString("hex")
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`
}

/** When a session id of this verifier's form was made (epoch ms); undefined for any other text. */
export const sessionCreatedAt = (sessionId: string): number | undefined =>
  SESSION_ID.test(sessionId) ? Number.parseInt(sessionId.slice(0, 8) + sessionId.slice(9, 13), 16) : undefined

/** The challenge (base64 of 16 bytes) of session `sessionId` asked for `agentId`, under `key`. */
export const challengeOf = (key: Uint8Array, sessionId: string, agentId: string): string =>
  crypto.createHmac("sha256", key).update(`attest push session challenge\u0000${sessionId}\u0000${agentId}`, "utf8").digest().subarray(0, 16).toString("base64")

/**
 * Random bytes for attestation challenges, drawn from a pool filled 4 KiB at a time: each call of
 * crypto.randomBytes makes a native job object and a syscall-backed draw (measured 2–20 µs for
 * 16 bytes on a loaded machine, once per push attestation); a slice of the pool costs a copy. Every
 * byte is used once; the pool is the same CSPRNG's output.
 */
const POOL_BYTES = 4096
const pool = Buffer.alloc(POOL_BYTES)
let poolAt = POOL_BYTES

/** Base64 of `n` (≤ 4096) fresh random bytes: an attestation's challenge. */
export const randomBase64 = (n: number): string => {
  if (poolAt + n > POOL_BYTES) {
    crypto.randomFillSync(pool)
    poolAt = 0
  }
  const text = pool.toString("base64", poolAt, poolAt + n)
  // the used bytes are overwritten, so nothing in memory repeats a challenge once it is sent
  pool.fill(0, poolAt, poolAt + n)
  poolAt += n
  return text
}

/** A fresh key for challenges (hex), offered to the store at start (PushRepo.sessionKey). */
export const newChallengeKey = (): string => crypto.randomBytes(32).toString("hex")
