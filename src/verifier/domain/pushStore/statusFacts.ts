/**
 * What a push agent's v2 status says of its attestations besides Keylime's counters (attest's
 * additions, so an admin reading `GET /v2.x/agents/<id>` or the bulk list sees why a push agent
 * failed, as a pull agent's status says it): the verdict of its latest completed attestation and
 * that attestation's index, and its latest failed attestation's reason, time, failure type and
 * message. One read of the kept history (`push_attestations`, bounded per agent) for one agent or
 * for every push agent at once (the bulk status); the attestation path never runs it.
 */
import type { SqlClient } from "@effect/sql"
import { Effect, Either, Schema } from "effect"
import { Failure } from "../../../../schemas/Evidence.js"
import { DbInteger } from "../../../db/dialect.js"
import { storeError } from "../errors.js"

export interface PushStatusFacts {
  /** The verdict of the latest completed attestation; null before the first. */
  readonly lastEvaluation: "pass" | "fail" | null
  /** Its index (the attestation's number in `/v3/agents/<id>/attestations/<index>`). */
  readonly lastAttestationIndex: number | null
  /** The latest failed attestation: its reason (policy_violation, broken_evidence_chain), completion time (epoch ms), first failure. */
  readonly lastFailure: {
    readonly reason: string | null
    readonly at: number | null
    readonly type: string | null
    readonly message: string | null
  } | null
}

export const NO_PUSH_FACTS: PushStatusFacts = { lastEvaluation: null, lastAttestationIndex: null, lastFailure: null }

const Row = Schema.Struct({
  agent_id: Schema.String,
  idx: DbInteger,
  evaluation: Schema.String,
  failure_reason: Schema.NullOr(Schema.String),
  failures: Schema.NullOr(Schema.String),
  verification_completed_at: Schema.NullOr(DbInteger)
})
const decodeRow = Schema.decodeUnknownEither(Row)
const decodeFailures = Schema.decodeUnknownEither(Schema.parseJson(Schema.Array(Failure)))

const firstFailure = (text: string | null): { readonly type: string | null; readonly message: string | null } => {
  if (text === null || text === "") return { type: null, message: null }
  const failures = decodeFailures(text)
  if (Either.isLeft(failures) || failures.right.length === 0) return { type: null, message: null }
  const f = failures.right[0]!
  const message = typeof f.context["message"] === "string" ? f.context["message"] : null
  return { type: f.type, message }
}

/** Per push agent (all, or the one given), its latest completed and latest failed attestation. */
export const readPushStatusFacts = (sql: SqlClient.SqlClient, agentId?: string) =>
  Effect.gen(function*() {
    const only = agentId === undefined ? sql`1 = 1` : sql`a.agent_id = ${agentId}`
    const rows = yield* sql`SELECT a.agent_id, a.idx, a.evaluation, a.failure_reason, a.failures, a.verification_completed_at
      FROM push_attestations a
      WHERE ${only} AND a.stage = 'verification_complete' AND (
        a.idx = (SELECT MAX(b.idx) FROM push_attestations b WHERE b.agent_id = a.agent_id AND b.stage = 'verification_complete')
        OR a.idx = (SELECT MAX(c.idx) FROM push_attestations c WHERE c.agent_id = a.agent_id AND c.evaluation = 'fail'))
      ORDER BY a.agent_id, a.idx`.pipe(Effect.mapError(storeError("read push status facts")))
    const out = new Map<string, PushStatusFacts>()
    for (const raw of rows) {
      const r = decodeRow(raw)
      if (Either.isLeft(r)) return yield* Effect.fail(storeError("read push status facts")(r.left))
      const row = r.right
      const before = out.get(row.agent_id) ?? NO_PUSH_FACTS
      // rows come oldest first: the later one is the latest completed
      const failed = row.evaluation === "fail"
        ? { reason: row.failure_reason, at: row.verification_completed_at, ...firstFailure(row.failures) }
        : before.lastFailure
      out.set(row.agent_id, {
        lastEvaluation: row.evaluation === "pass" || row.evaluation === "fail" ? row.evaluation : before.lastEvaluation,
        lastAttestationIndex: row.idx,
        lastFailure: failed
      })
    }
    return out
  })
