/**
 * PoP sessions (spec §4.5.4, §5.4; push-model.md §1.6). POST answers with a session id and a
 * 16-byte challenge and stores nothing (push/challenges.ts: the challenge is recomputed from the id
 * under the verifier's key), as Keylime answers any agent id; only creations per client address
 * are limited. PATCH with the TPM2_Certify proof (the agent's registered AK certifies itself over
 * the challenge, checked by the TPM core's verifyCertify with Keylime's fixed sha256/rsassa)
 * stores the session with a bearer token `<session id>.<secret>`, of which only the SHA-256 is
 * kept; only enrolled push agents can prove (anyone else: 200 with evaluation fail, as Keylime),
 * failed proofs are limited per client address and tokens issued per agent (only its own proofs
 * count). PATCH with the existing token extends it. One active session per agent; an
 * administrator's change of the agent ends its sessions (SessionEnds). Tokens live
 * `session_lifetime`; a passed attestation extends them.
 */
import * as crypto from "node:crypto"
import { Clock, Effect, Either, Option } from "effect"
import { VerifierConfig } from "../../config/services.js"
import { recordPushSession, recordPushToken, unsafeRecordPushToken } from "../../ops/metrics.js"
import { fromBase64 } from "../../tpm/bytes.js"
import { verifyCertify } from "../../tpm/verifyCertify.js"
import { challengeOf, newChallengeKey, newSessionId, sessionCreatedAt } from "./challenges.js"
import { SessionNotFound, SessionRateLimited, SessionRequestInvalid, TokenRefused } from "./errors.js"
import { addressKey, makeRateLimiter } from "./rateLimit.js"
import { PushRepo } from "../domain/pushStore/repo.js"
import type { SessionRow, SessionState } from "../domain/pushStore/rows.js"
import { TokenCache } from "../domain/pushStore/tokenCache.js"

/** What a PATCH came to: Keylime answers 200 pass, 200 fail (expired challenge, unknown agent) or 401 fail (bad proof). */
export type SessionOutcome =
  | { readonly _tag: "Pass"; readonly session: SessionRow; readonly token?: string; readonly proof?: { readonly message: string; readonly signature: string } }
  | { readonly _tag: "Fail"; readonly session: SessionRow; readonly why: "challenge_expired" | "not_enrolled" | "bad_proof"; readonly detail: string }

export interface SessionCreate {
  readonly agentId: string
  readonly methods: ReadonlyArray<{ readonly authentication_class: string; readonly authentication_type: string }>
  readonly clientAddress: string
}

export interface SessionProve {
  readonly sessionId: string
  readonly agentId: string
  readonly proof?: { readonly message: string; readonly signature: string } | undefined
  /** The Authorization header's token, when the agent extends a session it holds. */
  readonly bearer?: string | undefined
  readonly clientAddress: string
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** How far in the future a session id's time may be (another process's clock). */
const CLOCK_SKEW_MS = 60_000

export const hashToken = (token: string): string => crypto.createHash("sha256").update(token, "utf8").digest("hex")

const sameHash = (a: string, b: string): boolean => a.length === b.length && crypto.timingSafeEqual(Buffer.from(a), Buffer.from(b))

/** Why the stored state of an agent's session refuses its token at `now`; undefined when it authenticates. */
export const sessionRefusal = (s: SessionState, agentId: string, now: number): TokenRefused | undefined => {
  if (s.agent_id !== agentId) return new TokenRefused({ reason: "unknown" })
  if (!s.active) return s.ended_reason === null ? new TokenRefused({ reason: "inactive" }) : new TokenRefused({ reason: "ended", ended: s.ended_reason })
  if (s.token_expires_at === null || s.token_expires_at <= now) return new TokenRefused({ reason: "expired" })
  return undefined
}

export class Sessions extends Effect.Service<Sessions>()("attest/verifier/push/Sessions", {
  dependencies: [TokenCache.Default],
  effect: Effect.gen(function*() {
    const repo = yield* PushRepo
    const config = yield* VerifierConfig
    const recent = yield* TokenCache
    const clock = yield* Effect.clock
    const key = Buffer.from(yield* repo.sessionKey(newChallengeKey(), yield* Clock.currentTimeMillis), "hex")
    const ipRule = { limit: config.session_create_rate_limit_per_ip, windowMs: config.session_create_rate_limit_window_ip * 1000 }
    const createdByAddress = makeRateLimiter(ipRule)
    const failedProofsByAddress = makeRateLimiter(ipRule)
    const tokensByAgent = makeRateLimiter({ limit: config.session_create_rate_limit_per_agent, windowMs: config.session_create_rate_limit_window_agent * 1000 })
    const lifetimeMs = config.session_lifetime * 1000
    const challengeMs = config.nonce_lifetime * 1000

    /** A session as it is before its proof: everything follows from its id and agent. */
    const unproved = (sessionId: string, agentId: string, createdAt: number): SessionRow => ({
      session_id: sessionId,
      agent_id: agentId,
      challenge: challengeOf(key, sessionId, agentId),
      created_at: createdAt,
      challenges_expire_at: createdAt + challengeMs,
      response_received_at: null,
      token_hash: null,
      token_expires_at: null,
      active: false,
      ended_reason: null
    })

    /** POST: a session id and its challenge; nothing stored, for any agent id (Keylime checks enrolment at the proof). */
    const create = Effect.fn("Sessions.create")(function*(req: SessionCreate) {
      if (!req.methods.some((m) => m.authentication_type === "tpm_pop")) {
        return yield* new SessionRequestInvalid({ detail: "authentication_supported must include tpm_pop authentication type" })
      }
      const now = yield* Clock.currentTimeMillis
      const wait = createdByAddress.hit(addressKey(req.clientAddress), now)
      if (wait !== undefined) return yield* Effect.zipRight(recordPushSession("refused"), new SessionRateLimited({ scope: "ip", retryAfterSeconds: wait }))
      yield* recordPushSession("created")
      return unproved(newSessionId(now), req.agentId, now)
    })

    /** The session a token names, if the token is its own and still valid at `now`. */
    // every agent request checks its token: no spans without an OTLP exporter (as the pull loop)
    const traced = config.otlp_endpoint.trim() !== ""
    const checkToken = (token: string) =>
      Effect.suspend(() => {
        // a session checked moments ago answers from memory, without an effect per step
        const hit = cachedSession(token, clock.unsafeCurrentTimeMillis())
        if (hit !== undefined) {
          unsafeRecordPushToken("accepted")
          return Effect.succeed(hit)
        }
        return checkTokenOnce(token).pipe(
          Effect.tapBoth({
            onFailure: (e) => recordPushToken(e.reason === "expired" ? "expired" : "rejected"),
            onSuccess: () => recordPushToken("accepted")
          })
        )
      })

    /** The session of `token` when this process checked it moments ago and the token is the session's own. */
    const cachedSession = (token: string, now: number): SessionRow | undefined => {
      const dot = token.indexOf(".")
      if (dot <= 0) return undefined
      const cached = recent.get(token.slice(0, dot), now)
      return cached !== undefined && sameHash(cached.token_hash!, hashToken(token)) ? cached : undefined
    }

    const checkTokenOnce = (token: string) =>
      Effect.gen(function*() {
        const dot = token.indexOf(".")
        const sessionId = dot === -1 ? "" : token.slice(0, dot)
        if (!UUID.test(sessionId) || dot === token.length - 1) return yield* new TokenRefused({ reason: "unknown" })
        const mark = recent.mark()
        const found = yield* Effect.orDie(repo.findSession(sessionId))
        if (Option.isNone(found) || found.value.token_hash === null) return yield* new TokenRefused({ reason: "unknown" })
        const session = found.value
        if (!sameHash(session.token_hash!, hashToken(token))) return yield* new TokenRefused({ reason: "unknown" })
        const now = yield* Clock.currentTimeMillis
        const refusal = sessionRefusal(session, session.agent_id, now)
        if (refusal !== undefined) return yield* refusal
        recent.put(session, now, mark)
        return session
      }).pipe(traced ? Effect.withSpan("Sessions.checkToken") : Effect.withTracerEnabled(false))

    /** Extension of a proved session with its own token. */
    const extend = (req: SessionProve, bearer: string, now: number) =>
      Effect.gen(function*() {
        const found = yield* repo.findSession(req.sessionId)
        if (Option.isNone(found)) return yield* new SessionNotFound({ sessionId: req.sessionId })
        const session = found.value
        if (session.agent_id !== req.agentId) return yield* new SessionRequestInvalid({ detail: "Agent ID mismatch" })
        const held = yield* checkToken(bearer)
        if (held.session_id !== session.session_id) return yield* new TokenRefused({ reason: "unknown" })
        // the store decides: a session ended since the token was checked is not extended
        if (!(yield* repo.extendSession(session.session_id, now + lifetimeMs))) {
          recent.forget(session.session_id)
          return yield* Effect.flatMap(Effect.orDie(repo.findSession(session.session_id)), (s) =>
            Effect.fail(Option.match(s, { onNone: () => new TokenRefused({ reason: "unknown" }), onSome: (row) => sessionRefusal(row, req.agentId, now) ?? new TokenRefused({ reason: "inactive" }) })))
        }
        recent.extended(session.agent_id, now + lifetimeMs)
        return { _tag: "Pass", session: { ...session, token_expires_at: now + lifetimeMs } } as SessionOutcome
      })

    const prove = Effect.fn("Sessions.prove")(function*(req: SessionProve) {
      const now = yield* Clock.currentTimeMillis
      // only ids this verifier made name a session (made at most a minute ahead of this clock)
      const createdAt = sessionCreatedAt(req.sessionId)
      if (createdAt === undefined || createdAt > now + CLOCK_SKEW_MS) return yield* new SessionNotFound({ sessionId: req.sessionId })
      if (req.bearer !== undefined && req.proof === undefined) return yield* extend(req, req.bearer, now)
      if (req.proof === undefined) return yield* new SessionRequestInvalid({ detail: "authentication_provided must include tpm_pop authentication data" })

      const session = unproved(req.sessionId, req.agentId, createdAt)
      if (session.challenges_expire_at <= now) return { _tag: "Fail", session, why: "challenge_expired", detail: "the challenge expired" } as SessionOutcome
      // failed proofs cost a read and a signature check: limited per client address (never per agent,
      // which anyone could spend)
      const address = addressKey(req.clientAddress)
      const wait = failedProofsByAddress.wait(address, now)
      if (wait !== undefined) return yield* new SessionRateLimited({ scope: "proofs", retryAfterSeconds: wait })
      const failed = (why: "not_enrolled" | "bad_proof", detail: string) =>
        Effect.sync(() => {
          failedProofsByAddress.count(address, now)
          return { _tag: "Fail", session: { ...session, response_received_at: now }, why, detail } as SessionOutcome
        })

      const ak = yield* repo.findPushEnrolment(req.agentId)
      if (Option.isNone(ak)) return yield* failed("not_enrolled", "the agent is not enrolled as a push agent at this verifier")
      const akPublic = fromBase64(ak.value)
      const attest = fromBase64(req.proof.message)
      const signature = fromBase64(req.proof.signature)
      const verified = akPublic === undefined || attest === undefined || signature === undefined
        ? Either.left({ message: "the proof is not base64" })
        : verifyCertify({ objectPublic: akPublic, attest, signature, nonce: new Uint8Array(Buffer.from(session.challenge, "base64")), hashAlg: "sha256", scheme: "rsassa" })
      if (Either.isLeft(verified)) {
        yield* Effect.logInfo(`PoP of agent ${req.agentId} refused: ${verified.left.message}`)
        return yield* failed("bad_proof", verified.left.message)
      }
      // tokens per agent: only proofs made with its AK reach here
      const agentWait = tokensByAgent.wait(req.agentId, now)
      if (agentWait !== undefined) return yield* new SessionRateLimited({ scope: "agent", retryAfterSeconds: agentWait })

      const token = `${session.session_id}.${crypto.randomBytes(32).toString("base64url")}`
      const stored = yield* repo.activateSession({
        sessionId: session.session_id,
        agentId: req.agentId,
        challenge: session.challenge,
        createdAt,
        challengesExpireAt: session.challenges_expire_at,
        tokenHash: hashToken(token),
        expiresAt: now + lifetimeMs,
        at: now
      })
      if (!stored) return yield* new SessionRequestInvalid({ detail: "Session already authenticated: extend it with its token" })
      tokensByAgent.count(req.agentId, now)
      // the agent's earlier sessions ended with it
      recent.forgetAgent(req.agentId)
      yield* recordPushToken("issued")
      yield* Effect.logInfo(`PoP session of agent ${req.agentId} authenticated`)
      return {
        _tag: "Pass",
        session: { ...session, active: true, response_received_at: now, token_expires_at: now + lifetimeMs, token_hash: "" },
        token,
        proof: req.proof
      } as SessionOutcome
    })

    /**
     * A passed attestation of `agentId` at `now`: the agent's token expiry to store (session_lifetime
     * from now), or undefined when passes do not extend tokens or this process extended the token
     * less than a tenth of its lifetime ago (an agent attesting every few seconds would otherwise
     * rewrite its session at every pass; its token still never runs out while it passes).
     */
    const extendedTokenExpiry = (agentId: string, now: number): number | undefined => {
      if (!config.extend_token_on_attestation) return undefined
      const known = recent.expiryOf(agentId)
      return known !== undefined && known >= now + lifetimeMs - lifetimeMs / 10 ? undefined : now + lifetimeMs
    }
    /** The agent's active token was extended to `expiresAt` (stored first). */
    const tokenExtended = (agentId: string, expiresAt: number) => recent.extended(agentId, expiresAt)

    return { create, prove, checkToken, extendedTokenExpiry, tokenExtended } as const
  })
}) {}
