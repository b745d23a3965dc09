/**
 * A re-registration of an active agent is staged (issue 8): the new challenge and contact data wait
 * in `pending_*` columns while the active record (what the verifier and tenant read) stays as it
 * is; a successful activation moves them over in one UPDATE. NULL `pending_challenge_key` = nothing
 * staged.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

const migration = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // one column per statement: SQLite's ALTER TABLE adds a single column
  yield* sql`ALTER TABLE registrar_agents ADD COLUMN pending_challenge_key TEXT`
  yield* sql`ALTER TABLE registrar_agents ADD COLUMN pending_ekcert TEXT`
  yield* sql`ALTER TABLE registrar_agents ADD COLUMN pending_ip TEXT`
  yield* sql`ALTER TABLE registrar_agents ADD COLUMN pending_port INTEGER`
  yield* sql`ALTER TABLE registrar_agents ADD COLUMN pending_mtls_cert TEXT`
  yield* sql`ALTER TABLE registrar_agents ADD COLUMN pending_at TEXT`
})

export default migration
