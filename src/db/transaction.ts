/**
 * `sql.withTransaction` whose COMMIT or ROLLBACK failing is a typed `SqlError`, not a defect:
 * @effect/sql dies when either statement fails, and a full disk (SQLITE_FULL at COMMIT) or a
 * connection lost between the body and COMMIT is an outage the caller answers with 503 and the
 * loop retries, not a crash of the request or the fiber.
 */
import { type SqlClient, SqlError } from "@effect/sql"
import { Effect, Option } from "effect"

export const inTransaction = <A, E, R>(sql: SqlClient.SqlClient, self: Effect.Effect<A, E, R>): Effect.Effect<A, E | SqlError.SqlError, R> =>
  sql.withTransaction(self).pipe(
    Effect.catchSomeDefect((defect) => defect instanceof SqlError.SqlError ? Option.some(Effect.fail(defect)) : Option.none())
  )
