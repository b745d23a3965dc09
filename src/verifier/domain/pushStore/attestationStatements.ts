/**
 * The statements every push attestation runs, compiled once and run on one reserved connection a
 * group (src/db/reserved.ts): phase 1's context read (with the state of the request's session) and
 * insert, phase 2's guarded accept (in an active session), and the
 * verdict (attestation, push state and token, atomic: a transaction on SQLite, one statement with
 * data-modifying CTEs on PostgreSQL). Same SQL on both backends otherwise.
 */
import { type SqlClient, SqlError } from "@effect/sql"
import { Effect, Either, Option, Schema, Struct } from "effect"
import { type Compiled, compiled, onReservedConnection, type ReservedConnection } from "../../../db/reserved.js"
import { storeError, type VerifierStoreError } from "../errors.js"
import { agentsWithPolicyFacts } from "../repo/policyFacts.js"
import { fastLatest, fastOr, fastSession, memoizedFacts } from "./fastRows.js"
import {
  type AttestationContext,
  LatestAttestation,
  type NewAttestation,
  type OutcomeWrite,
  PushAgentFacts,
  type PushAgentRow,
  SessionRow,
  type SessionState,
  type VerdictWrite,
  type VerdictWrites
} from "./rows.js"

const AGENT_FACT_COLUMNS: ReadonlyArray<string> = [
  "a.agent_id",
  "a.operational_state",
  "a.ak_tpm",
  "a.tpm_policy",
  "a.ima_sign_verification_keys",
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
const SESSION_COLUMNS: ReadonlyArray<keyof SessionState> = ["agent_id", "active", "ended_reason", "token_expires_at"]

/** The statements every attestation runs, on one reserved connection (PushRepo.grouped). */
export interface AttestationStatements {
  /** The agent's AttestationContext (with the state of session `sessionId` when given); None when no such agent is enrolled. */
  readonly attestationContext: (agentId: string, sessionId?: string) => Effect.Effect<Option.Option<AttestationContext>, VerifierStoreError>
  /**
   * The evaluation and boot time of the agent's latest attestation that received its evidence: an
   * attestation left awaiting evidence (its agent died between its two requests) judged nothing.
   * Read only when the latest is such an attestation, so not on the hot path.
   */
  readonly latestWithEvidence: (agentId: string) => Effect.Effect<Option.Option<{ readonly evaluation: string; readonly boot_time: string }>, VerifierStoreError>
  /** The agent's push row, created (accepting, no deadline) at its first attestation. */
  readonly ensurePushAgent: (agentId: string, at: number) => Effect.Effect<void, VerifierStoreError>
  /** False when attestation (agent, idx) exists already. */
  readonly insertAttestation: (a: NewAttestation) => Effect.Effect<boolean, VerifierStoreError>
  /**
   * The agent's completed attestations with an index at most `upTo` deleted (its bounded history,
   * trimmed as each new attestation is created: a few rows by key, never a fleet's worth at once).
   */
  readonly pruneAgentAttestations: (agentId: string, upTo: number) => Effect.Effect<void, VerifierStoreError>
  /**
   * Evidence accepted for verification, judged by `judge` (a cluster runner's address; none in
   * single-process mode); false when the attestation no longer awaits it or is no longer the latest,
   * or (when `sessionId` is given) that session is no longer active and unexpired.
   */
  readonly acceptEvidence: (agentId: string, idx: number, evidence: string, at: number, sessionId?: string, judge?: string) => Effect.Effect<boolean, VerifierStoreError>
  readonly completeAttestation: (agentId: string, idx: number, r: VerdictWrite) => Effect.Effect<void, VerifierStoreError>
  readonly recordOutcome: (agentId: string, w: OutcomeWrite) => Effect.Effect<void, VerifierStoreError>
  /** A passed attestation extends the agent's active token. */
  readonly extendAgentTokens: (agentId: string, expiresAt: number) => Effect.Effect<void, VerifierStoreError>
  /**
   * A verdict's writes, in one transaction, only if it completes the attestation: false, with
   * nothing written, when the attestation was judged already (the verdict ran twice, e.g. in two
   * processes), so a verdict counts once.
   */
  readonly recordVerdict: (agentId: string, idx: number, v: VerdictWrites) => Effect.Effect<boolean, VerifierStoreError>
}

/** How a verdict moves the failure count: a pass clears it (auto_recover_attestation_failures) or keeps it; a fail adds one. */
type OutcomeKind = "passClearing" | "pass" | "fail"
const FAILURE_COUNT: Record<OutcomeKind, string> = { passClearing: "0", pass: "consecutive_failures", fail: "consecutive_failures + 1" }
const outcomeKind = (w: OutcomeWrite): OutcomeKind => w.pass ? (w.clearFailures ? "passClearing" : "pass") : "fail"

// synchronous decoders: the context row is read on every attestation
const decodeFacts = Schema.decodeUnknownEither(PushAgentFacts)
const decodeLatest = Schema.decodeUnknownEither(LatestAttestation)
const decodeState = Schema.decodeUnknownEither(Schema.Struct({ evaluation_state: Schema.NullOr(Schema.String) }))
const decodeSessionState = Schema.decodeUnknownEither(Schema.Struct(Struct.pick(SessionRow.fields, "agent_id", "active", "ended_reason", "token_expires_at")))

/** `grouped(body)`: body with the hot statements on one reserved connection; only they may touch the database inside it. */
export const attestationStatements = (sql: SqlClient.SqlClient) => {
  const agentsFrom = agentsWithPolicyFacts(sql)
  const contextColumns = sql.literal(
    [
      ...AGENT_FACT_COLUMNS,
      "p.agent_id AS p_agent_id",
      "p.evaluation_state AS p_evaluation_state",
      ...LATEST_COLUMNS.map((c) => `t.${c} AS t_${c}`),
      ...SESSION_COLUMNS.map((c) => `s.${c} AS s_${c}`)
    ].join(", ")
  )
  // the session of the request's token, by its key: an administrator's change (in any process
  // sharing the database) ends it, and the attestation path sees that here, whatever a token cache says
  const CONTEXT = compiled(sql`SELECT ${contextColumns} FROM ${agentsFrom}
    LEFT JOIN push_agents p ON p.agent_id = a.agent_id
    LEFT JOIN push_attestations t ON t.agent_id = a.agent_id AND t.idx = (SELECT MAX(idx) FROM push_attestations WHERE agent_id = ${""})
    LEFT JOIN push_sessions s ON s.session_id = ${""}
    WHERE a.agent_id = ${""}`)
  const LATEST_WITH_EVIDENCE = compiled(sql`SELECT evaluation, boot_time FROM push_attestations
    WHERE agent_id = ${""} AND stage <> 'awaiting_evidence' ORDER BY idx DESC LIMIT 1`)
  const ENSURE_PUSH_AGENT = compiled(sql`INSERT INTO push_agents (agent_id, accept_attestations, consecutive_failures, attestation_count,
      last_received_at, last_success_at, deadline_at, evaluation_state, next_index, updated_at)
    VALUES (${""}, 1, 0, 0, NULL, NULL, NULL, NULL, 0, ${0}) ON CONFLICT (agent_id) DO NOTHING`)
  const INSERT_ATTESTATION = compiled(sql`INSERT INTO push_attestations (agent_id, idx, stage, evaluation, failure_reason, capabilities,
      evidence_requested, evidence, failures, boot_time, capabilities_received_at, challenges_expire_at, evidence_received_at,
      verification_completed_at)
    VALUES (${""}, ${0}, 'awaiting_evidence', 'pending', NULL, ${""}, ${""}, NULL, NULL, ${""}, ${0}, ${0}, NULL, NULL)
    ON CONFLICT (agent_id, idx) DO NOTHING RETURNING idx`)
  const PRUNE_AGENT = compiled(sql`DELETE FROM push_attestations WHERE agent_id = ${""} AND idx <= ${0} AND stage = 'verification_complete'`)
  // only while the attestation still awaits evidence and is still the agent's latest (phase 2 may
  // run on what phase 1 handed over, without reading the store)
  const acceptSql = (sessionChecked: boolean) =>
    sql`UPDATE push_attestations SET stage = 'evaluating_evidence', evidence = ${""}, evidence_received_at = ${0}, judged_by = ${""}
    WHERE agent_id = ${""} AND idx = ${0} AND stage = 'awaiting_evidence'
      AND NOT EXISTS (SELECT 1 FROM push_attestations n WHERE n.agent_id = ${""} AND n.idx > ${0})${
      sessionChecked
        ? sql`
      AND EXISTS (SELECT 1 FROM push_sessions s WHERE s.session_id = ${""} AND s.agent_id = ${""} AND s.active = 1 AND s.token_expires_at > ${0})`
        : sql``
    } RETURNING idx`
  // the session check: phase 2 may run on what phase 1 handed over in this process, reading nothing
  // else, and a session an administrator ended meanwhile (here or elsewhere) must not be accepted
  const ACCEPT_EVIDENCE = compiled(acceptSql(false))
  const ACCEPT_EVIDENCE_IN_SESSION = compiled(acceptSql(true))
  const completeSql = sql`UPDATE push_attestations SET stage = 'verification_complete', evaluation = ${""},
    failure_reason = ${""}, failures = ${""}, verification_completed_at = ${0}
    WHERE agent_id = ${""} AND idx = ${0} AND stage = 'evaluating_evidence'`
  /** The push state after a verdict; the three ways a verdict moves the failure count, each its own text, with the same parameters. */
  const outcomeSql = (failures: OutcomeKind, onlyIfCompleted = false) =>
    sql`UPDATE push_agents SET accept_attestations = 1, consecutive_failures = ${sql.literal(FAILURE_COUNT[failures])},
      attestation_count = attestation_count + ${0}, last_received_at = ${0}, last_success_at = COALESCE(${0}, last_success_at),
      deadline_at = ${0}, evaluation_state = ${""}, updated_at = ${0}
      WHERE agent_id = ${""}${onlyIfCompleted ? sql` AND EXISTS (SELECT 1 FROM completed) RETURNING agent_id` : sql``}`
  const extendTokensSql = (onlyIfCompleted = false) =>
    sql`UPDATE push_sessions SET token_expires_at = ${0} WHERE agent_id = ${""} AND active = 1${
      onlyIfCompleted ? sql` AND EXISTS (SELECT 1 FROM completed)` : sql``
    }`
  const COMPLETE_ATTESTATION = compiled(sql`${completeSql} RETURNING idx`)
  const OUTCOME = { passClearing: compiled(outcomeSql("passClearing")), pass: compiled(outcomeSql("pass")), fail: compiled(outcomeSql("fail")) }
  const EXTEND_AGENT_TOKENS = compiled(extendTokensSql())
  // PostgreSQL writes a verdict as one statement (data-modifying CTEs: atomic, one round trip,
  // where BEGIN and COMMIT would be two more); SQLite has no DML in a CTE and uses a transaction.
  // The push state and the token follow only a completion this verdict made (`completed`): the
  // attestation's row lock makes a second run of the same verdict complete nothing
  const isPg = sql.onDialectOrElse({ pg: () => true, orElse: () => false })
  const verdictPg = (kind: OutcomeKind, extendsTokens: boolean) =>
    compiled(sql`WITH completed AS (${completeSql} RETURNING idx)${extendsTokens ? sql`, extended AS (${extendTokensSql(true)} RETURNING agent_id)` : sql``}
      ${outcomeSql(kind, true)}`)
  const VERDICT_PG = isPg
    ? {
      passClearing: [verdictPg("passClearing", false), verdictPg("passClearing", true)],
      pass: [verdictPg("pass", false), verdictPg("pass", true)],
      fail: [verdictPg("fail", false), verdictPg("fail", true)]
    } as const
    : undefined

  // the facts of each agent decoded once while its row stays the same (fastRows.ts)
  const factsOf = memoizedFacts(Object.keys(PushAgentFacts.fields), decodeFacts)

  /** Reads of the context row: the agent's facts, its push row (when it has one) and its latest attestation (when it has one). */
  const contextOfRow = (agentId: string, r: Record<string, unknown> | undefined): Effect.Effect<Option.Option<AttestationContext>, VerifierStoreError> => {
    if (r === undefined) return Effect.succeed(Option.none())
    const agent = factsOf(agentId, r)
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
      const row = fastOr(fields, fastLatest, decodeLatest)
      if (Either.isLeft(row)) return Effect.fail(storeError("read attestation context")(row.left))
      latest = Option.some(row.right)
    }
    let session: Option.Option<SessionState> = Option.none()
    if (r["s_agent_id"] !== null && r["s_agent_id"] !== undefined) {
      const fields: Record<string, unknown> = {}
      for (const c of SESSION_COLUMNS) fields[c] = r[`s_${c}`]
      const row = fastOr(fields, fastSession, decodeSessionState)
      if (Either.isLeft(row)) return Effect.fail(storeError("read attestation context")(row.left))
      session = Option.some(row.right)
    }
    return Effect.succeed(Option.some({ agent: agent.right, push, latest, session }))
  }

  /** The hot statements on one reserved connection. */
  const statementsOn = (c: ReservedConnection): AttestationStatements => {
    const exec = (operation: string, statement: Compiled, params: ReadonlyArray<unknown>) =>
      Effect.mapError(c.run(statement, params), storeError(operation))
    /** True when this write moved the attestation from evaluating_evidence to verification_complete. */
    const completing = (agentId: string, idx: number, r: VerdictWrite) =>
      Effect.map(exec("complete attestation", COMPLETE_ATTESTATION, completeParams(agentId, idx, r)), (rows) => rows.length > 0)
    const completeAttestation = (agentId: string, idx: number, r: VerdictWrite) => Effect.asVoid(completing(agentId, idx, r))
    const outcomeParams = (agentId: string, w: OutcomeWrite) => [w.pass ? 1 : 0, w.at, w.pass ? w.at : null, w.deadlineAt, w.evaluationState, w.at, agentId]
    const completeParams = (agentId: string, idx: number, r: VerdictWrite) => [r.pass ? "pass" : "fail", r.reason, r.failures, r.at, agentId, idx]
    const recordOutcome = (agentId: string, w: OutcomeWrite) => Effect.asVoid(exec("record push outcome", OUTCOME[outcomeKind(w)], outcomeParams(agentId, w)))
    const extendAgentTokens = (agentId: string, expiresAt: number) => Effect.asVoid(exec("extend session", EXTEND_AGENT_TOKENS, [expiresAt, agentId]))
    return {
      attestationContext: (agentId, sessionId) =>
        Effect.flatMap(exec("read attestation context", CONTEXT, [agentId, sessionId ?? "", agentId]), (rows) => contextOfRow(agentId, rows[0])),
      latestWithEvidence: (agentId) =>
        Effect.map(exec("read latest attestation with evidence", LATEST_WITH_EVIDENCE, [agentId]), (rows) => {
          const r = rows[0]
          return r === undefined ? Option.none() : Option.some({ evaluation: String(r["evaluation"]), boot_time: String(r["boot_time"]) })
        }),
      ensurePushAgent: (agentId, at) => Effect.asVoid(exec("create push agent", ENSURE_PUSH_AGENT, [agentId, at])),
      insertAttestation: (a) =>
        Effect.map(
          exec("insert attestation", INSERT_ATTESTATION, [a.agent_id, a.idx, a.capabilities, a.evidence_requested, a.boot_time, a.capabilities_received_at, a.challenges_expire_at]),
          (rows) => rows.length > 0
        ),
      pruneAgentAttestations: (agentId, upTo) => Effect.asVoid(exec("prune attestations", PRUNE_AGENT, [agentId, upTo])),
      acceptEvidence: (agentId, idx, evidence, at, sessionId, judge) =>
        Effect.map(
          sessionId === undefined
            ? exec("accept evidence", ACCEPT_EVIDENCE, [evidence, at, judge ?? null, agentId, idx, agentId, idx])
            : exec("accept evidence", ACCEPT_EVIDENCE_IN_SESSION, [evidence, at, judge ?? null, agentId, idx, agentId, idx, sessionId, agentId, at]),
          (rows) => rows.length > 0
        ),
      completeAttestation,
      recordOutcome,
      extendAgentTokens,
      // atomic: the attestation's stage and the agent's push state never disagree
      recordVerdict: (agentId, idx, v) => {
        if (VERDICT_PG !== undefined) {
          const extending = v.tokenExpiresAt !== undefined
          return Effect.map(
            exec("record verdict", VERDICT_PG[outcomeKind(v.outcome)][extending ? 1 : 0], [
              ...completeParams(agentId, idx, v.verdict),
              ...(extending ? [v.tokenExpiresAt, agentId] : []),
              ...outcomeParams(agentId, v.outcome)
            ]),
            (rows) => rows.length > 0
          )
        }
        return c.transaction(Effect.gen(function*() {
          if (!(yield* completing(agentId, idx, v.verdict))) return false
          yield* recordOutcome(agentId, v.outcome)
          if (v.tokenExpiresAt !== undefined) yield* extendAgentTokens(agentId, v.tokenExpiresAt)
          return true
        })).pipe(Effect.mapError((e) => e instanceof SqlError.SqlError ? storeError("record verdict")(e) : e))
      }
    }
  }
  /** `body` with the hot statements on one reserved connection: only they may touch the database inside it. */
  const grouped = <A, E, R>(body: (statements: AttestationStatements) => Effect.Effect<A, E, R>): Effect.Effect<A, E | VerifierStoreError, R> =>
    onReservedConnection(sql, (c) => body(statementsOn(c))).pipe(
      Effect.mapError((e) => e instanceof SqlError.SqlError ? storeError("reserve a connection")(e) : e)
    )
  return { grouped } as const
}
