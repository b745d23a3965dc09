/**
 * Migration 1: a small key/value table for facts about the database itself (which component
 * created it, format notes). Also the model for new migrations:
 *
 *   1. add `src/db/migrations/NNNN_<what>.ts` with the next free number, exporting `default` an
 *      Effect that needs only `SqlClient` and uses dialect-neutral SQL (helpers in src/db/dialect.ts:
 *      `columnTypes(sql).bytes`, `.bigint`, `.autoId`; booleans as INTEGER 0/1; bytes as base64 TEXT
 *      or `bytes`; timestamps as BIGINT seconds);
 *   2. register it in `src/db/migrations/index.ts` under the key "NNNN_<what>".
 * Never edit a migration that has shipped: add a new one.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

const migration = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE attest_meta (
    meta_key TEXT PRIMARY KEY,
    meta_value TEXT NOT NULL,
    updated_at BIGINT NOT NULL
  )`
})

export default migration
