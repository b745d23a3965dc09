/**
 * The push model's tables (migrations 0020-0022): sessions, per-agent push state with its stored
 * deadline, and attestations. Times are epoch ms. Writes that race (two creations of the same
 * index, evidence twice) are conditional and report whether they won. Same SQL on SQLite and
 * PostgreSQL.
 */
import { SqlClient, SqlError } from "@effect/sql"
import { Effect, Either, Option, Schema, Struct } from "effect"
import { DbBoolean, DbInteger } from "../../db/dialect.js"
import { type Compiled, compiled, onReservedConnection, type ReservedConnection } from "../../db/reserved.js"
import { storeError, type VerifierStoreError } from "../errors.js"
import { agentsWithPolicyFacts } from "../repo/policyFacts.js"
import { AgentView } from "../repo/rows.js"

export const SessionRow = Schema.Struct({
  session_id: Schema.String,
  agent_id: Schema.String,
  challenge: Schema.String,
  created_at: DbInteger,
  challenges_expire_at: DbInteger,
  response_received_at: Schema.NullOr(DbInteger),
  token_hash: Schema.NullOr(Schema.String),
  token_expires_at: Schema.NullOr(DbInteger),
  active: DbBoolean
})
export type SessionRow = typeof SessionRow.Type

export const PushAgentRow = Schema.Struct({
  agent_id: Schema.String,
  accept_attestations: DbBoolean,
  consecutive_failures: DbInteger,
  attestation_count: DbInteger,
  last_received_at: Schema.NullOr(DbInteger),
  last_success_at: Schema.NullOr(DbInteger),
  deadline_at: Schema.NullOr(DbInteger),
  evaluation_state: Schema.NullOr(Schema.String),
  /** Written 0 at creation and no longer advanced: the next index follows the latest attestation (its key refuses a duplicate). */
  next_index: DbInteger,
  updated_at: DbInteger
})
export type PushAgentRow = typeof PushAgentRow.Type

export const AttestationRow = Schema.Struct({
  agent_id: Schema.String,
  idx: DbInteger,
  stage: Schema.Literal("awaiting_evidence", "evaluating_evidence", "verification_complete"),
  evaluation: Schema.Literal("pending", "pass", "fail"),
  failure_reason: Schema.NullOr(Schema.Literal("broken_evidence_chain", "policy_violation")),
  capabilities: Schema.String,
  evidence_requested: Schema.String,
  evidence: Schema.NullOr(Schema.String),
  failures: Schema.NullOr(Schema.String),
  boot_time: Schema.String,
  capabilities_received_at: DbInteger,
  challenges_expire_at: DbInteger,
  evidence_received_at: Schema.NullOr(DbInteger),
  verification_completed_at: Schema.NullOr(DbInteger)
})
export type AttestationRow = typeof AttestationRow.Type

/** What negotiation and verification read of the agent's enrolment: no policy text, no pull-loop state. */
export const PushAgentFacts = Schema.Struct(Struct.pick(AgentView.fields,
  "agent_id",
  "ak_tpm",
  "tpm_policy",
  "accept_tpm_hash_algs",
  "accept_tpm_encryption_algs",
  "accept_tpm_signing_algs",
  "runtime_policy_name",
  "runtime_policy_checksum",
  "runtime_policy_has_policy",
  "mb_policy_name",
  "mb_policy_checksum",
  "mb_policy_has_policy"
))
export type PushAgentFacts = typeof PushAgentFacts.Type

/** The latest attestation without its stored evidence and failures (large; the hot path never reads them). */
export const LatestAttestation = Schema.Struct(Struct.omit(AttestationRow.fields, "evidence", "failures"))
export type LatestAttestation = typeof LatestAttestation.Type

/**
 * Everything phase 1 and phase 2 read before they write, in one statement: the agent's facts,
 * its push row (absent before its first attestation) and its latest attestation.
 */
export interface AttestationContext {
  readonly agent: PushAgentFacts
  readonly push: Option.Option<Pick<PushAgentRow, "evaluation_state">>
  readonly latest: Option.Option<LatestAttestation>
}

const AGENT_FACT_COLUMNS: ReadonlyArray<string> = [
  "a.agent_id",
  "a.ak_tpm",
  "a.tpm_policy",
  "a.accept_tpm_hash_algs",
  "a.accept_tpm_encryption_algs",
  "a.accept_tpm_signing_algs",
  "a.runtime_policy_name",
  "r.checksum AS runtime_policy_checksum",
  "r.has_policy AS runtime_policy_has_policy",
  "a.mb_policy_name",
  "m.checksum AS mb_policy_checksum",
  "m.has_policy AS mb_policy_has_policy"
]
const LATEST_COLUMNS = Object.keys(LatestAttestation.fields).filter((c) => c !== "agent_id")

export interface NewAttestation {
  readonly agent_id: string
  readonly idx: number
  readonly capabilities: string
  readonly evidence_requested: string
  readonly boot_time: string
  readonly capabilities_received_at: number
  readonly challenges_expire_at: number
}

/** After a verdict: the push state of a pass or a fail (push-model.md §2.1). */
export interface OutcomeWrite {
  readonly pass: boolean
  readonly at: number
  readonly deadlineAt: number
  readonly evaluationState: string | null
  /** `auto_recover_attestation_failures`: a pass clears earlier failures. */
  readonly clearFailures: boolean
}

/** An attestation's verdict as stored on it. */
export interface VerdictWrite {
  readonly pass: boolean
  readonly reason: string | null
  readonly failures: string
  readonly at: number
}

/** Everything a verdict writes: the attestation, the agent's push state and, for a pass that extends tokens, its active token. */
export interface VerdictWrites {
  readonly verdict: VerdictWrite
  readonly outcome: OutcomeWrite
  readonly tokenExpiresAt: number | undefined
}

/** The statements every attestation runs, on one reserved connection (PushRepo.grouped). */
export interface AttestationStatements {
  /** The agent's AttestationContext; None when no such agent is enrolled. */
  readonly attestationContext: (agentId: string) => Effect.Effect<Option.Option<AttestationContext>, VerifierStoreError>
  /** The agent's push row, created (accepting, no deadline) at its first attestation. */
  readonly ensurePushAgent: (agentId: string, at: number) => Effect.Effect<void, VerifierStoreError>
  /** False when attestation (agent, idx) exists already. */
  readonly insertAttestation: (a: NewAttestation) => Effect.Effect<boolean, VerifierStoreError>
  /** Evidence accepted for verification; false when the attestation no longer awaits it or is no longer the latest. */
  readonly acceptEvidence: (agentId: string, idx: number, evidence: string, at: number) => Effect.Effect<boolean, VerifierStoreError>
  readonly completeAttestation: (agentId: string, idx: number, r: VerdictWrite) => Effect.Effect<void, VerifierStoreError>
  readonly recordOutcome: (agentId: string, w: OutcomeWrite) => Effect.Effect<void, VerifierStoreError>
  /** A passed attestation extends the agent's active token. */
  readonly extendAgentTokens: (agentId: string, expiresAt: number) => Effect.Effect<void, VerifierStoreError>
  /** A verdict's writes, in one transaction. */
  readonly recordVerdict: (agentId: string, idx: number, v: VerdictWrites) => Effect.Effect<void, VerifierStoreError>
}

/** How a verdict moves the failure count: a pass clears it (auto_recover_attestation_failures) or keeps it; a fail adds one. */
type OutcomeKind = "passClearing" | "pass" | "fail"
const FAILURE_COUNT: Record<OutcomeKind, string> = { passClearing: "0", pass: "consecutive_failures", fail: "consecutive_failures + 1" }
const outcomeKind = (w: OutcomeWrite): OutcomeKind => w.pass ? (w.clearFailures ? "passClearing" : "pass") : "fail"

// synchronous decoders: a row read on every request need not pay for an effect per row
const decodeSession = Schema.decodeUnknownEither(SessionRow)
const decodePushAgent = Schema.decodeUnknownEither(PushAgentRow)
const decodeAttestation = Schema.decodeUnknownEither(AttestationRow)
const decodeFacts = Schema.decodeUnknownEither(PushAgentFacts)
const decodeLatest = Schema.decodeUnknownEither(LatestAttestation)
const decodeState = Schema.decodeUnknownEither(Schema.Struct({ evaluation_state: Schema.NullOr(Schema.String) }))

export class PushRepo extends Effect.Service<PushRepo>()("attest/verifier/push/PushRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const one = <A>(operation: string, decode: (u: unknown) => Either.Either<A, unknown>) => (rows: ReadonlyArray<unknown>) => {
      if (rows.length === 0) return Effect.succeed(Option.none<A>())
      const decoded = decode(rows[0])
      return Either.isRight(decoded) ? Effect.succeed(Option.some(decoded.right)) : Effect.fail(storeError(operation)(decoded.left))
    }
    const run = <A>(operation: string, e: Effect.Effect<A, unknown>) => Effect.mapError(e, storeError(operation))

    // --- sessions ---
    const insertSession = (row: Omit<SessionRow, "response_received_at" | "token_hash" | "token_expires_at" | "active">) =>
      run("insert session", sql`INSERT INTO push_sessions ${sql.insert({ ...row, active: 0 })}`)
    const findSession = (sessionId: string) =>
      run("find session", sql`SELECT * FROM push_sessions WHERE session_id = ${sessionId}`).pipe(Effect.flatMap(one("find session", decodeSession)))
    /** The proof verified: this session holds the token; every other session of the agent ends. */
    const activateSession = (s: { readonly sessionId: string; readonly agentId: string; readonly tokenHash: string; readonly expiresAt: number; readonly at: number }) =>
      run(
        "activate session",
        sql.withTransaction(Effect.gen(function*() {
          yield* sql`DELETE FROM push_sessions WHERE agent_id = ${s.agentId} AND session_id <> ${s.sessionId}`
          yield* sql`UPDATE push_sessions SET token_hash = ${s.tokenHash}, token_expires_at = ${s.expiresAt},
            response_received_at = ${s.at}, active = 1 WHERE session_id = ${s.sessionId}`
        }))
      )
    const extendSession = (sessionId: string, expiresAt: number) =>
      run("extend session", sql`UPDATE push_sessions SET token_expires_at = ${expiresAt} WHERE session_id = ${sessionId} AND active = 1`)
    const deleteSession = (sessionId: string) => run("delete session", sql`DELETE FROM push_sessions WHERE session_id = ${sessionId}`)
    /** Ended sessions: tokens expired, challenges never answered and expired. */
    const deleteExpiredSessions = (now: number) =>
      run(
        "delete expired sessions",
        sql`DELETE FROM push_sessions WHERE (active = 1 AND token_expires_at < ${now}) OR (active = 0 AND challenges_expire_at < ${now})`
      )

    // --- push agent state ---
    const findPushAgent = (agentId: string) =>
      run("find push agent", sql`SELECT * FROM push_agents WHERE agent_id = ${agentId}`).pipe(Effect.flatMap(one("find push agent", decodePushAgent)))
    /** Every push agent's row (the bulk status merges them). */
    const listPushAgents = run("list push agents", sql`SELECT * FROM push_agents`).pipe(
      Effect.flatMap((rows) => Effect.forEach(rows, (r) => Effect.mapError(decodePushAgent(r), storeError("list push agents"))))
    )
    /** Agents whose deadline passed while accepting: acceptance ends; their ids. */
    const expireDeadlines = (now: number) =>
      run(
        "expire push deadlines",
        sql<{ agent_id: string }>`UPDATE push_agents SET accept_attestations = 0, updated_at = ${now}
          WHERE accept_attestations = 1 AND deadline_at IS NOT NULL AND deadline_at <= ${now} RETURNING agent_id`
      ).pipe(Effect.map((rows) => rows.map((r) => String(r.agent_id))))
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

    // --- the statements of every attestation: compiled once, run on one reserved connection a group
    // (src/db/reserved.ts); each is also offered alone, on its own reservation ---
    const agentsFrom = agentsWithPolicyFacts(sql)
    const contextColumns = sql.literal(
      [...AGENT_FACT_COLUMNS, "p.agent_id AS p_agent_id", "p.evaluation_state AS p_evaluation_state", ...LATEST_COLUMNS.map((c) => `t.${c} AS t_${c}`)].join(", ")
    )
    const CONTEXT = compiled(sql`SELECT ${contextColumns} FROM ${agentsFrom}
      LEFT JOIN push_agents p ON p.agent_id = a.agent_id
      LEFT JOIN push_attestations t ON t.agent_id = a.agent_id AND t.idx = (SELECT MAX(idx) FROM push_attestations WHERE agent_id = ${""})
      WHERE a.agent_id = ${""}`)
    const ENSURE_PUSH_AGENT = compiled(sql`INSERT INTO push_agents (agent_id, accept_attestations, consecutive_failures, attestation_count,
        last_received_at, last_success_at, deadline_at, evaluation_state, next_index, updated_at)
      VALUES (${""}, 1, 0, 0, NULL, NULL, NULL, NULL, 0, ${0}) ON CONFLICT (agent_id) DO NOTHING`)
    const INSERT_ATTESTATION = compiled(sql`INSERT INTO push_attestations (agent_id, idx, stage, evaluation, failure_reason, capabilities,
        evidence_requested, evidence, failures, boot_time, capabilities_received_at, challenges_expire_at, evidence_received_at,
        verification_completed_at)
      VALUES (${""}, ${0}, 'awaiting_evidence', 'pending', NULL, ${""}, ${""}, NULL, NULL, ${""}, ${0}, ${0}, NULL, NULL)
      ON CONFLICT (agent_id, idx) DO NOTHING RETURNING idx`)
    // only while the attestation still awaits evidence and is still the agent's latest (phase 2 may
    // run on what phase 1 handed over, without reading the store)
    const ACCEPT_EVIDENCE = compiled(sql`UPDATE push_attestations SET stage = 'evaluating_evidence', evidence = ${""}, evidence_received_at = ${0}
      WHERE agent_id = ${""} AND idx = ${0} AND stage = 'awaiting_evidence'
        AND NOT EXISTS (SELECT 1 FROM push_attestations n WHERE n.agent_id = ${""} AND n.idx > ${0}) RETURNING idx`)
    const completeSql = sql`UPDATE push_attestations SET stage = 'verification_complete', evaluation = ${""},
      failure_reason = ${""}, failures = ${""}, verification_completed_at = ${0}
      WHERE agent_id = ${""} AND idx = ${0} AND stage = 'evaluating_evidence'`
    /** The push state after a verdict; the three ways a verdict moves the failure count, each its own text, with the same parameters. */
    const outcomeSql = (failures: OutcomeKind) =>
      sql`UPDATE push_agents SET accept_attestations = 1, consecutive_failures = ${sql.literal(FAILURE_COUNT[failures])},
        attestation_count = attestation_count + ${0}, last_received_at = ${0}, last_success_at = COALESCE(${0}, last_success_at),
        deadline_at = ${0}, evaluation_state = ${""}, updated_at = ${0}
        WHERE agent_id = ${""}`
    const extendTokensSql = sql`UPDATE push_sessions SET token_expires_at = ${0} WHERE agent_id = ${""} AND active = 1`
    const COMPLETE_ATTESTATION = compiled(completeSql)
    const OUTCOME = { passClearing: compiled(outcomeSql("passClearing")), pass: compiled(outcomeSql("pass")), fail: compiled(outcomeSql("fail")) }
    const EXTEND_AGENT_TOKENS = compiled(extendTokensSql)
    // PostgreSQL writes a verdict as one statement (data-modifying CTEs: atomic, one round trip,
    // where BEGIN and COMMIT would be two more); SQLite has no DML in a CTE and uses a transaction
    const isPg = sql.onDialectOrElse({ pg: () => true, orElse: () => false })
    const verdictPg = (kind: OutcomeKind, extendsTokens: boolean) =>
      compiled(sql`WITH completed AS (${completeSql} RETURNING idx)${extendsTokens ? sql`, extended AS (${extendTokensSql} RETURNING agent_id)` : sql``}
        ${outcomeSql(kind)}`)
    const VERDICT_PG = isPg
      ? {
        passClearing: [verdictPg("passClearing", false), verdictPg("passClearing", true)],
        pass: [verdictPg("pass", false), verdictPg("pass", true)],
        fail: [verdictPg("fail", false), verdictPg("fail", true)]
      } as const
      : undefined

    /** Reads of the context row: the agent's facts, its push row (when it has one) and its latest attestation (when it has one). */
    const contextOfRow = (agentId: string, r: Record<string, unknown> | undefined): Effect.Effect<Option.Option<AttestationContext>, VerifierStoreError> => {
      if (r === undefined) return Effect.succeed(Option.none())
      const agent = decodeFacts(r)
      if (Either.isLeft(agent)) return Effect.fail(storeError("read attestation context")(agent.left))
      let push: Option.Option<Pick<PushAgentRow, "evaluation_state">> = Option.none()
      if (r["p_agent_id"] !== null && r["p_agent_id"] !== undefined) {
        const state = decodeState({ evaluation_state: r["p_evaluation_state"] })
        if (Either.isLeft(state)) return Effect.fail(storeError("read attestation context")(state.left))
        push = Option.some(state.right)
      }
      let latest: Option.Option<LatestAttestation> = Option.none()
      if (r["t_idx"] !== null && r["t_idx"] !== undefined) {
        const fields: Record<string, unknown> = { agent_id: agentId }
        for (const c of LATEST_COLUMNS) fields[c] = r[`t_${c}`]
        const row = decodeLatest(fields)
        if (Either.isLeft(row)) return Effect.fail(storeError("read attestation context")(row.left))
        latest = Option.some(row.right)
      }
      return Effect.succeed(Option.some({ agent: agent.right, push, latest }))
    }

    /** The hot statements on one reserved connection. */
    const statementsOn = (c: ReservedConnection): AttestationStatements => {
      const exec = (operation: string, statement: Compiled, params: ReadonlyArray<unknown>) =>
        Effect.mapError(c.run(statement, params), storeError(operation))
      const completeAttestation = (agentId: string, idx: number, r: VerdictWrite) =>
        Effect.asVoid(exec("complete attestation", COMPLETE_ATTESTATION, completeParams(agentId, idx, r)))
      const outcomeParams = (agentId: string, w: OutcomeWrite) => [w.pass ? 1 : 0, w.at, w.pass ? w.at : null, w.deadlineAt, w.evaluationState, w.at, agentId]
      const completeParams = (agentId: string, idx: number, r: VerdictWrite) => [r.pass ? "pass" : "fail", r.reason, r.failures, r.at, agentId, idx]
      const recordOutcome = (agentId: string, w: OutcomeWrite) => Effect.asVoid(exec("record push outcome", OUTCOME[outcomeKind(w)], outcomeParams(agentId, w)))
      const extendAgentTokens = (agentId: string, expiresAt: number) => Effect.asVoid(exec("extend session", EXTEND_AGENT_TOKENS, [expiresAt, agentId]))
      return {
        attestationContext: (agentId) => Effect.flatMap(exec("read attestation context", CONTEXT, [agentId, agentId]), (rows) => contextOfRow(agentId, rows[0])),
        ensurePushAgent: (agentId, at) => Effect.asVoid(exec("create push agent", ENSURE_PUSH_AGENT, [agentId, at])),
        insertAttestation: (a) =>
          Effect.map(
            exec("insert attestation", INSERT_ATTESTATION, [a.agent_id, a.idx, a.capabilities, a.evidence_requested, a.boot_time, a.capabilities_received_at, a.challenges_expire_at]),
            (rows) => rows.length > 0
          ),
        acceptEvidence: (agentId, idx, evidence, at) =>
          Effect.map(exec("accept evidence", ACCEPT_EVIDENCE, [evidence, at, agentId, idx, agentId, idx]), (rows) => rows.length > 0),
        completeAttestation,
        recordOutcome,
        extendAgentTokens,
        // atomic: the attestation's stage and the agent's push state never disagree
        recordVerdict: (agentId, idx, v) => {
          if (VERDICT_PG !== undefined) {
            const extending = v.tokenExpiresAt !== undefined
            return Effect.asVoid(exec("record verdict", VERDICT_PG[outcomeKind(v.outcome)][extending ? 1 : 0], [
              ...completeParams(agentId, idx, v.verdict),
              ...(extending ? [v.tokenExpiresAt, agentId] : []),
              ...outcomeParams(agentId, v.outcome)
            ]))
          }
          return c.transaction(Effect.gen(function*() {
            yield* completeAttestation(agentId, idx, v.verdict)
            yield* recordOutcome(agentId, v.outcome)
            if (v.tokenExpiresAt !== undefined) yield* extendAgentTokens(agentId, v.tokenExpiresAt)
          })).pipe(Effect.mapError((e) => e instanceof SqlError.SqlError ? storeError("record verdict")(e) : e))
        }
      }
    }
    /** `body` with the hot statements on one reserved connection: only they may touch the database inside it. */
    const grouped = <A, E, R>(body: (statements: AttestationStatements) => Effect.Effect<A, E, R>): Effect.Effect<A, E | VerifierStoreError, R> =>
      onReservedConnection(sql, (c) => body(statementsOn(c))).pipe(
        Effect.mapError((e) => e instanceof SqlError.SqlError ? storeError("reserve a connection")(e) : e)
      )

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
     * an agent attesting every 2 s writes 43,200 a day). The latest and anything still pending stay.
     */
    const pruneAttestations = (keep: number) =>
      run(
        "prune attestations",
        sql`DELETE FROM push_attestations WHERE stage = 'verification_complete'
          AND idx <= (SELECT MAX(m.idx) FROM push_attestations m WHERE m.agent_id = push_attestations.agent_id) - ${keep}`
      ).pipe(Effect.asVoid)

    /** Verifications a stopped process left in evaluating_evidence (they are run again at start). */
    const evaluating = run(
      "list evaluating attestations",
      sql<{ agent_id: string; idx: unknown }>`SELECT agent_id, idx FROM push_attestations WHERE stage = 'evaluating_evidence'`
    ).pipe(Effect.map((rows) => rows.map((r) => ({ agentId: String(r.agent_id), idx: Number(r.idx) }))))

    return {
      insertSession,
      findSession,
      activateSession,
      extendSession,
      extendAgentTokens: (agentId: string, expiresAt: number) => grouped((s) => s.extendAgentTokens(agentId, expiresAt)),
      deleteSession,
      deleteExpiredSessions,
      findPushAgent,
      ensurePushAgent: (agentId: string, at: number) => grouped((s) => s.ensurePushAgent(agentId, at)),
      listPushAgents,
      recordOutcome: (agentId: string, w: OutcomeWrite) => grouped((s) => s.recordOutcome(agentId, w)),
      expireDeadlines,
      nextDeadline,
      restoreAcceptance,
      attestationContext: (agentId: string) => grouped((s) => s.attestationContext(agentId)),
      insertAttestation: (a: NewAttestation) => grouped((s) => s.insertAttestation(a)),
      findAttestation,
      latestAttestation,
      listAttestations,
      acceptEvidence: (agentId: string, idx: number, evidence: string, at: number) => grouped((s) => s.acceptEvidence(agentId, idx, evidence, at)),
      completeAttestation: (agentId: string, idx: number, r: VerdictWrite) => grouped((s) => s.completeAttestation(agentId, idx, r)),
      recordVerdict: (agentId: string, idx: number, v: VerdictWrites) => grouped((s) => s.recordVerdict(agentId, idx, v)),
      grouped,
      pruneAttestations,
      evaluating
    } as const
  })
}) {}
