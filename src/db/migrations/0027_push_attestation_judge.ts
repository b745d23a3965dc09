/**
 * Who judges a push attestation's evidence (issue 24, cluster mode): the runner that accepted it
 * (`cluster_runner_host:cluster_runner_port`; NULL in single-process mode), so the cluster's push
 * duties (src/verifier/pull/cluster/PushDutiesSingleton.ts) re-run at once the verdicts a dead
 * runner left, and a restarted runner those of its former self. The partial index keeps the look
 * for verdicts still in evaluating_evidence cheap however long the history is.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

const migration = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE push_attestations ADD COLUMN judged_by TEXT`
  yield* sql`CREATE INDEX push_attestations_evaluating ON push_attestations (evidence_received_at) WHERE stage = 'evaluating_evidence'`
})

export default migration
