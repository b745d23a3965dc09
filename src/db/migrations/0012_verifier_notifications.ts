/**
 * Outbox of revocation notifications: a verdict enqueues one row per configured notifier; the
 * notifier delivers, retries with backoff (`attempts`, `next_attempt_at`) and deletes on success.
 * Rows outlive their agent (a webhook still hears about a deleted agent's failure). Bounded per
 * notifier by the repository (oldest dropped, with a warning).
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { columnTypes } from "../dialect.js"

const migration = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const t = columnTypes(sql)
  yield* sql`CREATE TABLE verifier_notifications (
    id ${t.autoId},
    notifier TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    payload TEXT NOT NULL,
    attempts INTEGER NOT NULL,
    next_attempt_at BIGINT NOT NULL,
    last_error TEXT,
    created_at BIGINT NOT NULL
  )`
  yield* sql`CREATE INDEX verifier_notifications_due ON verifier_notifications (notifier, next_attempt_at)`
})

export default migration
