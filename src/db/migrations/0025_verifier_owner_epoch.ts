/**
 * The owner epoch of a pull agent (a fencing token, issue 23 §3): a loop takes the next epoch when
 * it starts and every write of that loop is conditional on it, so when a second process (the same
 * `verifier_id`) starts a loop for the agent, the first loop's next write loses and that loop ends.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

const migration = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE verifier_agents ADD COLUMN owner_epoch BIGINT NOT NULL DEFAULT 0`
})

export default migration
