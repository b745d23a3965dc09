/**
 * Each push agent's latest completed and latest failed attestation (its v2 status, read every few
 * seconds by an open dashboard for the whole fleet) from an index alone: without it the read walked
 * every kept attestation row, evidence and all (200 agents' 22,000 kept rows: ~90 MB of pages, ~85 ms
 * a read on SQLite).
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

const migration = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE INDEX push_attestations_outcomes ON push_attestations (agent_id, stage, evaluation, idx)`
})

export default migration
