/**
 * PoP sessions (spec §4.5.4, §5.4; push-model.md §1.6): POST creates a session with a 16-byte
 * challenge (rate limited per client address and per agent id); PATCH with the TPM2_Certify
 * proof (the agent's registered AK certifies itself over the challenge, checked by the TPM core's
 * verifyCertify with Keylime's fixed sha256/rsassa) issues a bearer token `<session id>.<secret>`,
 * of which only the SHA-256 is stored; PATCH with the existing token extends it. One active session
 * per agent. Tokens live `session_lifetime`; a passed attestation extends them.
 */
import * as crypto from "node:crypto"
import { Clock, Effect, Either, Option } from "effect"
import { VerifierConfig } from "../../config/services.js"
import { recordPushSession, recordPushToken, unsafeRecordPushToken } from "../../ops/metrics.js"
import { fromBase64 } from "../../tpm/bytes.js"
import { verifyCertify } from "../../tpm/verifyCertify.js"
import { AgentRepo } from "../repo/AgentRepo.js"
import { SessionNotFound, SessionRateLimited, SessionRequestInvalid, TokenRefused } from "./errors.js"
import { makeRateLimiter } from "./rateLimit.js"
import { PushRepo } from "./repo.js"
import type { SessionRow } from "./rows.js"
import { makeTokenCache } from "./tokenCache.js"

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
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

export const hashToken = (token: string): string => crypto.createHash("sha256").update(token, "utf8").digest("hex")

const sameHash = (a: string, b: string): boolean => a.length === b.length && crypto.timingSafeEqual(Buffer.from(a), Buffer.from(b))

export class Sessions extends Effect.Service<Sessions>()("attest/verifier/push/Sessions", {
  effect: Effect.gen(function*() {
    const repo = yield* PushRepo
    const agents = yield* AgentRepo
    const config = yield* VerifierConfig
    const byIp = makeRateLimiter({ limit: config.session_create_rate_limit_per_ip, windowMs: config.session_create_rate_limit_window_ip * 1000 })
    const byAgent = makeRateLimiter({ limit: config.session_create_rate_limit_per_agent, windowMs: config.session_create_rate_limit_window_agent * 1000 })
    const lifetimeMs = config.session_lifetime * 1000
    const recent = makeTokenCache()
    const clock = yield* Effect.clock

    const create = Effect.fn("Sessions.create")(function*(req: SessionCreate) {
      if (!req.methods.some((m) => m.authentication_type === "tpm_pop")) {
        return yield* new SessionRequestInvalid({ detail: "authentication_supported must include tpm_pop authentication type" })
      }
      const now = yield* Clock.currentTimeMillis
      const ipWait = byIp.hit(req.clientAddress, now)
      if (ipWait !== undefined) return yield* Effect.zipRight(recordPushSession("refused"), new SessionRateLimited({ scope: "ip", retryAfterSeconds: ipWait }))
      const agentWait = byAgent.hit(req.agentId, now)
      if (agentWait !== undefined) return yield* Effect.zipRight(recordPushSession("refused"), new SessionRateLimited({ scope: "agent", retryAfterSeconds: agentWait }))
      const row = {
        session_id: crypto.randomUUID(),
        agent_id: req.agentId,
        challenge: crypto.randomBytes(16).toString("base64"),
        created_at: now,
        challenges_expire_at: now + config.nonce_lifetime * 1000
      }
      yield* repo.insertSession(row)
      yield* recordPushSession("created")
      return { ...row, response_received_at: null, token_hash: null, token_expires_at: null, active: false } satisfies SessionRow
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
        const found = yield* Effect.orDie(repo.findSession(sessionId))
        if (Option.isNone(found) || found.value.token_hash === null) return yield* new TokenRefused({ reason: "unknown" })
        const session = found.value
        if (!sameHash(session.token_hash!, hashToken(token))) return yield* new TokenRefused({ reason: "unknown" })
        if (!session.active) return yield* new TokenRefused({ reason: "inactive" })
        const now = yield* Clock.currentTimeMillis
        if (session.token_expires_at === null || session.token_expires_at <= now) return yield* new TokenRefused({ reason: "expired" })
        recent.put(session, now)
        return session
      }).pipe(traced ? Effect.withSpan("Sessions.checkToken") : Effect.withTracerEnabled(false))

    const prove = Effect.fn("Sessions.prove")(function*(req: SessionProve) {
      const found = yield* repo.findSession(req.sessionId)
      if (Option.isNone(found)) return yield* new SessionNotFound({ sessionId: req.sessionId })
      const session = found.value
      if (session.agent_id !== req.agentId) return yield* new SessionRequestInvalid({ detail: "Agent ID mismatch" })
      const now = yield* Clock.currentTimeMillis

      // extension with the token the session issued
      if (req.bearer !== undefined && req.proof === undefined) {
        const held = yield* checkToken(req.bearer)
        if (held.session_id !== session.session_id) return yield* new TokenRefused({ reason: "unknown" })
        yield* repo.extendSession(session.session_id, now + lifetimeMs)
        recent.extended(session.agent_id, now + lifetimeMs)
        return { _tag: "Pass", session: { ...session, token_expires_at: now + lifetimeMs } } as SessionOutcome
      }
      if (req.proof === undefined) return yield* new SessionRequestInvalid({ detail: "authentication_provided must include tpm_pop authentication data" })
      if (session.active) return yield* new SessionRequestInvalid({ detail: "Session already authenticated: extend it with its token" })
      if (session.challenges_expire_at <= now) {
        yield* repo.deleteSession(session.session_id)
        recent.forget(session.session_id)
        return { _tag: "Fail", session, why: "challenge_expired", detail: "the challenge expired" } as SessionOutcome
      }
      const agent = yield* agents.find(req.agentId)
      if (Option.isNone(agent)) return { _tag: "Fail", session, why: "not_enrolled", detail: "the agent is not enrolled" } as SessionOutcome
      const ak = fromBase64(agent.value.ak_tpm)
      const attest = fromBase64(req.proof.message)
      const signature = fromBase64(req.proof.signature)
      const verified = ak === undefined || attest === undefined || signature === undefined
        ? Either.left({ message: "the proof is not base64" })
        : verifyCertify({ objectPublic: ak, attest, signature, nonce: new Uint8Array(Buffer.from(session.challenge, "base64")), hashAlg: "sha256", scheme: "rsassa" })
      if (Either.isLeft(verified)) {
        yield* Effect.logInfo(`PoP of agent ${req.agentId} refused: ${verified.left.message}`)
        return { _tag: "Fail", session, why: "bad_proof", detail: verified.left.message } as SessionOutcome
      }
      const token = `${session.session_id}.${crypto.randomBytes(32).toString("base64url")}`
      yield* repo.activateSession({ sessionId: session.session_id, agentId: req.agentId, tokenHash: hashToken(token), expiresAt: now + lifetimeMs, at: now })
      // the agent's earlier sessions were deleted with it
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
    /** The agent's active token was extended to `expiresAt` (stored). */
    const tokenExtended = (agentId: string, expiresAt: number) => recent.extended(agentId, expiresAt)

    return { create, prove, checkToken, extendedTokenExpiry, tokenExtended } as const
  })
}) {}
