/**
 * Claims on queued notifications (issue 23 §3): a notifier takes due rows by writing its process's
 * id and a lease into them (`FOR UPDATE SKIP LOCKED` on PostgreSQL; SQLite's single writer makes the
 * claiming UPDATE atomic), so two processes sharing the database never deliver one notice twice;
 * a lease that runs out (its process died mid-delivery) frees the row again.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

const migration = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE verifier_notifications ADD COLUMN claimed_by TEXT`
  yield* sql`ALTER TABLE verifier_notifications ADD COLUMN claimed_until BIGINT`
})

export default migration
