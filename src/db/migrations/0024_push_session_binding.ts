/**
 * Push sessions without stored challenges (issue 22): a session is stored only once its proof
 * verified (the challenge of an unproved one is recomputed from its id under the verifier's key,
 * kept in `push_session_keys` so every process sharing the database recognises it). A session an
 * administrator's change or a newer session of its agent ended stays, inactive, with
 * `ended_reason`, so its token is refused saying why until the sweep deletes it. Unproved sessions
 * and sessions of agents that are not push agents go.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

const migration = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE push_sessions ADD COLUMN ended_reason TEXT`
  yield* sql`DELETE FROM push_sessions WHERE active = 0 OR agent_id NOT IN (SELECT agent_id FROM push_agents)`
  yield* sql`CREATE TABLE push_session_keys (
    key_name TEXT PRIMARY KEY,
    key_value TEXT NOT NULL,
    created_at BIGINT NOT NULL
  )`
})

export default migration
