/**
 * What the last recorded failure said (the evaluator's message: for IMA the path and entry), beside
 * its type in `last_event_id`: the tenant's status and `attest up` show an operator which file or
 * event failed, not only the kind of failure. Set with last_event_id, by the same severity rule.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

const migration = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE verifier_agents ADD COLUMN last_event_message TEXT`
})

export default migration
