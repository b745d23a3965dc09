/**
 * Push attestations (push-model.md §1.3-1.5, §2.1): one row per cycle, indexed 0, 1, … per agent.
 * Capabilities, the verifier's choice (with the challenge) and the evidence are JSON; stage
 * awaiting_evidence → evaluating_evidence → verification_complete; evaluation pending|pass|fail
 * with the failure reason and the evaluator's failures. Times are epoch ms.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

const migration = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE push_attestations (
    agent_id TEXT NOT NULL REFERENCES verifier_agents (agent_id) ON DELETE CASCADE,
    idx BIGINT NOT NULL,
    stage TEXT NOT NULL,
    evaluation TEXT NOT NULL,
    failure_reason TEXT,
    capabilities TEXT NOT NULL,
    evidence_requested TEXT NOT NULL,
    evidence TEXT,
    failures TEXT,
    boot_time TEXT NOT NULL,
    capabilities_received_at BIGINT NOT NULL,
    challenges_expire_at BIGINT NOT NULL,
    evidence_received_at BIGINT,
    verification_completed_at BIGINT,
    PRIMARY KEY (agent_id, idx)
  )`
})

export default migration
