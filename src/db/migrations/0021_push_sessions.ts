/**
 * PoP sessions (push-model.md §1.6): the challenge and its expiry, then, once the TPM2_Certify
 * proof verified, the SHA-256 of the bearer token (never the token) and its expiry. Times are
 * epoch ms. Sessions may name agents that are not enrolled (POST /sessions always succeeds), so
 * there is no foreign key; PATCH checks enrolment.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

const migration = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE push_sessions (
    session_id TEXT PRIMARY KEY,
    agent_id TEXT NOT NULL,
    challenge TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    challenges_expire_at BIGINT NOT NULL,
    response_received_at BIGINT,
    token_hash TEXT,
    token_expires_at BIGINT,
    active INTEGER NOT NULL
  )`
  yield* sql`CREATE INDEX push_sessions_by_agent ON push_sessions (agent_id)`
})

export default migration
