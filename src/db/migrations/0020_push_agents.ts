/**
 * Push-model state per agent (push-model.md §2.1-2.3): acceptance, failure count, counters, the
 * evaluator's progress and the liveness deadline (`deadline_at`, epoch ms: quote_interval * 5 after
 * the last processed attestation; NULL before the first). Stored, so a restarted verifier keeps
 * every deadline (Keylime keeps its timers in memory). A row exists once the agent has pushed; it
 * goes with its agent.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

const migration = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE push_agents (
    agent_id TEXT PRIMARY KEY REFERENCES verifier_agents (agent_id) ON DELETE CASCADE,
    accept_attestations INTEGER NOT NULL,
    consecutive_failures INTEGER NOT NULL,
    attestation_count BIGINT NOT NULL,
    last_received_at BIGINT,
    last_success_at BIGINT,
    deadline_at BIGINT,
    evaluation_state TEXT,
    next_index BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
  )`
  yield* sql`CREATE INDEX push_agents_by_deadline ON push_agents (accept_attestations, deadline_at)`
})

export default migration
