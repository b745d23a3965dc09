/**
 * The registrar's table. Byte fields are base64 text (what the agent sent), timestamps ISO text,
 * booleans 0/1: the same DDL and queries on SQLite and PostgreSQL.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

const migration = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE registrar_agents (
    agent_id TEXT PRIMARY KEY,
    ek_tpm TEXT NOT NULL,
    ekcert TEXT,
    aik_tpm TEXT NOT NULL,
    ip TEXT,
    port INTEGER,
    mtls_cert TEXT,
    challenge_key TEXT NOT NULL,
    active INTEGER NOT NULL DEFAULT 0,
    regcount INTEGER NOT NULL DEFAULT 1,
    registered_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
  )`
})

export default migration
