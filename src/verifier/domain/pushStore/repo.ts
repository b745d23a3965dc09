/**
 * The push model's tables (migrations 0020-0022, 0024; rows in rows.ts): sessions, per-agent push state
 * with its stored deadline, and attestations. Times are epoch ms. Writes that race (two creations
 * of the same index, evidence twice) are conditional and report whether they won. Same SQL on
 * SQLite and PostgreSQL. The statements every attestation runs are attestationStatements.ts's,
 * offered here alone too (each on its own reservation) and in groups (`grouped`).
 */
import { SqlClient } from "@effect/sql"
import { Effect, Either, Option, Schema } from "effect"
import { storeError } from "../errors.js"
import { attestationStatements } from "./attestationStatements.js"
import { AttestationRow, type SessionEndReason, type NewAttestation, type OutcomeWrite, PushAgentRow, SessionRow, type VerdictWrite, type VerdictWrites } from "./rows.js"
import { inTransaction } from "../../../db/transaction.js"

// synchronous decoders: a row read on every request need not pay for an effect per row
const decodeSession = Schema.decodeUnknownEither(SessionRow)
const decodePushAgent = Schema.decodeUnknownEither(PushAgentRow)
const decodeAttestation = Schema.decodeUnknownEither(AttestationRow)

/** An attestation whose verdict is due, as the evaluating lists give it. */
const pendingOf = (rows: ReadonlyArray<{ readonly agent_id: string; readonly idx: unknown }>) => rows.map((r) => ({ agentId: String(r.agent_id), idx: Number(r.idx) }))

export class PushRepo extends Effect.Service<PushRepo>()("attest/verifier/push/PushRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const one = <A>(operation: string, decode: (u: unknown) => Either.Either<A, unknown>) => (rows: ReadonlyArray<unknown>) => {
      if (rows.length === 0) return Effect.succeed(Option.none<A>())
      const decoded = decode(rows[0])
      return Either.isRight(decoded) ? Effect.succeed(Option.some(decoded.right)) : Effect.fail(storeError(operation)(decoded.left))
    }
    const run = <A>(operation: string, e: Effect.Effect<A, unknown>) => Effect.mapError(e, storeError(operation))

    // --- sessions (only proved ones are stored: Sessions.ts) ---
    const findSession = (sessionId: string) =>
      run("find session", sql`SELECT * FROM push_sessions WHERE session_id = ${sessionId}`).pipe(Effect.flatMap(one("find session", decodeSession)))
    /**
     * The proof of a session verified: it is stored, holding the token, and every other active
     * session of the agent ends (`replaced`). False, with nothing written, when the session was
     * proved before (a proof is accepted once).
     */
    const activateSession = (s: {
      readonly sessionId: string
      readonly agentId: string
      readonly challenge: string
      readonly createdAt: number
      readonly challengesExpireAt: number
      readonly tokenHash: string
      readonly expiresAt: number
      readonly at: number
    }) =>
      run(
        "activate session",
        inTransaction(sql, Effect.gen(function*() {
          const inserted = yield* sql`INSERT INTO push_sessions ${
            sql.insert({
              session_id: s.sessionId,
              agent_id: s.agentId,
              challenge: s.challenge,
              created_at: s.createdAt,
              challenges_expire_at: s.challengesExpireAt,
              response_received_at: s.at,
              token_hash: s.tokenHash,
              token_expires_at: s.expiresAt,
              active: 1,
              ended_reason: null
            })
          } ON CONFLICT (session_id) DO NOTHING RETURNING session_id`
          if (inserted.length === 0) return false
          yield* sql`UPDATE push_sessions SET active = 0, ended_reason = 'replaced'
            WHERE agent_id = ${s.agentId} AND active = 1 AND session_id <> ${s.sessionId}`
          return true
        }))
      )
    /** False when the session is no longer active (ended, swept). */
    const extendSession = (sessionId: string, expiresAt: number) =>
      run("extend session", sql`UPDATE push_sessions SET token_expires_at = ${expiresAt} WHERE session_id = ${sessionId} AND active = 1 RETURNING session_id`).pipe(
        Effect.map((rows) => rows.length > 0)
      )
    /** Every active session of the agent ends, saying why (its tokens are refused from now on); how many. */
    const endAgentSessions = (agentId: string, reason: SessionEndReason) =>
      run(
        "end agent sessions",
        sql`UPDATE push_sessions SET active = 0, ended_reason = ${reason} WHERE agent_id = ${agentId} AND active = 1 RETURNING session_id`
      ).pipe(Effect.map((rows) => rows.length))
    /**
     * Sessions whose challenge and token have both expired (ended ones included): how many went.
     * A session stays while its challenge may be answered, so its proof cannot be accepted twice.
     */
    const deleteExpiredSessions = (now: number) =>
      run(
        "delete expired sessions",
        sql`DELETE FROM push_sessions WHERE challenges_expire_at < ${now} AND (token_expires_at IS NULL OR token_expires_at < ${now}) RETURNING session_id`
      ).pipe(Effect.map((rows) => rows.length))
    /** The AK of an enrolled push agent (one with push state), for its PoP; None for anyone else. */
    const findPushEnrolment = (agentId: string) =>
      run(
        "find push enrolment",
        sql<{ ak_tpm: string }>`SELECT a.ak_tpm FROM verifier_agents a JOIN push_agents p ON p.agent_id = a.agent_id WHERE a.agent_id = ${agentId}`
      ).pipe(Effect.map((rows) => rows.length === 0 ? Option.none<string>() : Option.some(String(rows[0]!.ak_tpm))))
    /**
     * The key session challenges are derived under (hex): `candidate` stored unless a process sharing
     * the database stored one first; every process then uses the stored one.
     */
    const sessionKey = (candidate: string, at: number) =>
      run(
        "read session key",
        Effect.zipRight(
          sql`INSERT INTO push_session_keys (key_name, key_value, created_at) VALUES ('session_challenge', ${candidate}, ${at}) ON CONFLICT (key_name) DO NOTHING`,
          sql<{ key_value: string }>`SELECT key_value FROM push_session_keys WHERE key_name = 'session_challenge'`
        )
      ).pipe(Effect.map((rows) => String(rows[0]?.key_value ?? candidate)))

    // --- push agent state ---
    const findPushAgent = (agentId: string) =>
      run("find push agent", sql`SELECT * FROM push_agents WHERE agent_id = ${agentId}`).pipe(Effect.flatMap(one("find push agent", decodePushAgent)))
    /** Every push agent's row (the bulk status merges them). */
    const listPushAgents = run("list push agents", sql`SELECT * FROM push_agents`).pipe(
      Effect.flatMap((rows) => Effect.forEach(rows, (r) => Effect.mapError(decodePushAgent(r), storeError("list push agents"))))
    )
    /**
     * Agents whose deadline passed while accepting: acceptance ends; their ids. Evidence received
     * before the deadline and still being judged met it (its judge may have died: another judges
     * it again, and that verdict writes the next deadline), so it keeps its agent accepted.
     */
    const expireDeadlines = (now: number) =>
      run(
        "expire push deadlines",
        sql<{ agent_id: string }>`UPDATE push_agents SET accept_attestations = 0, updated_at = ${now}
          WHERE accept_attestations = 1 AND deadline_at IS NOT NULL AND deadline_at <= ${now}
            AND NOT EXISTS (SELECT 1 FROM push_attestations a WHERE a.agent_id = push_agents.agent_id
              AND a.stage = 'evaluating_evidence' AND a.evidence_received_at <= push_agents.deadline_at)
          RETURNING agent_id`
      ).pipe(Effect.map((rows) => rows.map((r) => String(r.agent_id))))
    /**
     * No deadline lies further ahead than `latest` (now + one full deadline): one that does was
     * written before the clock went back (or before quote_interval was shortened) and would
     * otherwise let a silent agent go unnoticed for as long as the clock moved.
     */
    const clampDeadlines = (latest: number) =>
      run(
        "clamp push deadlines",
        sql`UPDATE push_agents SET deadline_at = ${latest} WHERE accept_attestations = 1 AND deadline_at > ${latest}`
      ).pipe(Effect.asVoid)
    /** The earliest deadline still pending, if any. */
    const nextDeadline = run(
      "next push deadline",
      sql<{ d: unknown }>`SELECT MIN(deadline_at) AS d FROM push_agents WHERE accept_attestations = 1 AND deadline_at IS NOT NULL`
    ).pipe(Effect.map((rows) => (rows[0]?.d === null || rows[0]?.d === undefined ? Option.none<number>() : Option.some(Number(rows[0].d)))))
    /** Re-registration or admin reactivation: attestations accepted again, failures forgotten, no deadline until the next one. */
    const restoreAcceptance = (agentId: string, at: number) =>
      run(
        "restore push acceptance",
        sql`UPDATE push_agents SET accept_attestations = 1, consecutive_failures = 0, deadline_at = NULL, updated_at = ${at}
          WHERE agent_id = ${agentId} RETURNING agent_id`
      ).pipe(Effect.map((rows) => rows.length > 0))

    const { grouped } = attestationStatements(sql)

    // --- attestations ---
    const findAttestation = (agentId: string, idx: number) =>
      run("find attestation", sql`SELECT * FROM push_attestations WHERE agent_id = ${agentId} AND idx = ${idx}`).pipe(
        Effect.flatMap(one("find attestation", decodeAttestation))
      )
    const latestAttestation = (agentId: string) =>
      run("find attestation", sql`SELECT * FROM push_attestations WHERE agent_id = ${agentId} ORDER BY idx DESC LIMIT 1`).pipe(
        Effect.flatMap(one("find attestation", decodeAttestation))
      )
    const listAttestations = (agentId: string) =>
      run("list attestations", sql`SELECT * FROM push_attestations WHERE agent_id = ${agentId} ORDER BY idx`).pipe(
        Effect.flatMap((rows) => Effect.mapError(Effect.forEach(rows, (r) => Either.match(decodeAttestation(r), { onLeft: Effect.fail, onRight: Effect.succeed })), storeError("list attestations")))
      )
    /**
     * Completed attestations older than each agent's latest `keep` are deleted (bounded history:
     * an agent attesting every 2 s writes 43,200 a day), at most `chunk` rows; how many went. The
     * latest and anything still pending stay. Each new attestation trims its own agent's history
     * (`pruneAgentAttestations`); this sweep finds what that left (a verdict still pending then, a
     * smaller `keep` after a restart), a chunk at a time: one statement deleting a fleet's minute of
     * rows held SQLite's only connection, and the loop that runs on it, for seconds.
     */
    const pruneAttestations = (keep: number, chunk: number) =>
      run(
        "prune attestations",
        sql`DELETE FROM push_attestations WHERE (agent_id, idx) IN (
          SELECT t.agent_id, t.idx FROM push_attestations t WHERE t.stage = 'verification_complete'
            AND t.idx <= (SELECT MAX(m.idx) FROM push_attestations m WHERE m.agent_id = t.agent_id) - ${keep}
          LIMIT ${chunk}) RETURNING idx`
      ).pipe(Effect.map((rows) => rows.length))

    /**
     * Attestations in evaluating_evidence (their verdict is run again at start), or only those
     * whose evidence arrived before `receivedBefore` (epoch ms): left by a process that died.
     */
    const evaluatingBefore = (receivedBefore?: number) =>
      run(
        "list evaluating attestations",
        sql<{ agent_id: string; idx: unknown }>`SELECT agent_id, idx FROM push_attestations WHERE stage = 'evaluating_evidence'${
          receivedBefore === undefined ? sql`` : sql` AND evidence_received_at < ${receivedBefore}`
        }`
      ).pipe(Effect.map(pendingOf))
    const evaluating = evaluatingBefore()
    /** Attestations in evaluating_evidence that `judge` accepted (a restarted runner's former self left them). */
    const evaluatingJudgedBy = (judge: string) =>
      run(
        "list evaluating attestations",
        sql<{ agent_id: string; idx: unknown }>`SELECT agent_id, idx FROM push_attestations WHERE stage = 'evaluating_evidence' AND judged_by = ${judge}`
      ).pipe(Effect.map(pendingOf))
    /**
     * Cluster mode's orphans: attestations in evaluating_evidence accepted by a runner that is not
     * among `liveJudges`, or whose evidence arrived before `receivedBefore` whoever judges them.
     */
    const orphanedVerdicts = (liveJudges: ReadonlyArray<string>, receivedBefore: number) =>
      run(
        "list orphaned push verdicts",
        sql<{ agent_id: string; idx: unknown }>`SELECT agent_id, idx FROM push_attestations WHERE stage = 'evaluating_evidence'
          AND ((judged_by IS NOT NULL${liveJudges.length === 0 ? sql`` : sql` AND judged_by NOT IN ${sql.in(liveJudges)}`}) OR evidence_received_at < ${receivedBefore})`
      ).pipe(Effect.map(pendingOf))

    return {
      findSession,
      activateSession,
      extendSession,
      endAgentSessions,
      findPushEnrolment,
      sessionKey,
      extendAgentTokens: (agentId: string, expiresAt: number) => grouped((s) => s.extendAgentTokens(agentId, expiresAt)),
      deleteExpiredSessions,
      findPushAgent,
      ensurePushAgent: (agentId: string, at: number) => grouped((s) => s.ensurePushAgent(agentId, at)),
      listPushAgents,
      recordOutcome: (agentId: string, w: OutcomeWrite) => grouped((s) => s.recordOutcome(agentId, w)),
      expireDeadlines,
      clampDeadlines,
      nextDeadline,
      restoreAcceptance,
      attestationContext: (agentId: string, sessionId?: string) => grouped((s) => s.attestationContext(agentId, sessionId)),
      insertAttestation: (a: NewAttestation) => grouped((s) => s.insertAttestation(a)),
      pruneAgentAttestations: (agentId: string, upTo: number) => grouped((s) => s.pruneAgentAttestations(agentId, upTo)),
      findAttestation,
      latestAttestation,
      listAttestations,
      acceptEvidence: (agentId: string, idx: number, evidence: string, at: number, sessionId?: string, judge?: string) =>
        grouped((s) => s.acceptEvidence(agentId, idx, evidence, at, sessionId, judge)),
      completeAttestation: (agentId: string, idx: number, r: VerdictWrite) => grouped((s) => s.completeAttestation(agentId, idx, r)),
      recordVerdict: (agentId: string, idx: number, v: VerdictWrites) => grouped((s) => s.recordVerdict(agentId, idx, v)),
      grouped,
      pruneAttestations,
      evaluating,
      evaluatingBefore,
      evaluatingJudgedBy,
      orphanedVerdicts
    } as const
  })
}) {}
