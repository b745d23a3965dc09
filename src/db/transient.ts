/**
 * Which database failures are worth one more try (issue 8): the connection went away (PostgreSQL
 * restarting, `pg_terminate_backend`, a network cut) or the database was momentarily busy. They are
 * retried once after a short backoff; a second failure is answered 503 with `Retry-After`, never
 * 500. A full or read-only disk is an outage of the store too (issue 26): nothing was written, and
 * the same request succeeds once space returns. Anything else (a constraint, a syntax error, a bad row) is a real error and is not retried.
 */
import type { SqlError } from "@effect/sql"
import { Effect } from "effect"

/**
 * SQLSTATE classes and codes of PostgreSQL that mean "try again": shutdown or restart (57P01-03),
 * out of resources (53100 disk full, 53300 too many connections), contention (40001 serialization,
 * 40P01 deadlock, 55P03 lock timeout) and a statement cancelled (57014: pg_cancel_backend by an
 * operator, a statement_timeout) — the statement was undone, and the same request succeeds again.
 */
const PG_TRANSIENT = new Set(["57P01", "57P02", "57P03", "53100", "53300", "40001", "40P01", "55P03", "57014"])
const NODE_TRANSIENT = new Set(["ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "EAI_AGAIN", "ENOSPC", "EROFS"])
const SQLITE_TRANSIENT = new Set(["SQLITE_BUSY", "SQLITE_LOCKED", "SQLITE_FULL"])
/** better-sqlite3's extended codes: SQLITE_IOERR_WRITE, SQLITE_READONLY_DBMOVED, … */
const SQLITE_TRANSIENT_FAMILY = /^SQLITE_(IOERR|READONLY|BUSY)/
const MESSAGE_TRANSIENT =
  /connection terminated|connection error|not queryable|connection timed out|timeout exceeded when trying to connect|terminating connection/i

const transientCause = (cause: unknown, depth: number): boolean => {
  if (cause === null || typeof cause !== "object" || depth > 4) return false
  const { code, message } = cause as { readonly code?: unknown; readonly message?: unknown }
  if (typeof code === "string") {
    if (PG_TRANSIENT.has(code) || code.startsWith("08") || NODE_TRANSIENT.has(code) || SQLITE_TRANSIENT.has(code) || SQLITE_TRANSIENT_FAMILY.test(code)) return true
  }
  if (typeof message === "string" && MESSAGE_TRANSIENT.test(message)) return true
  return transientCause((cause as { readonly cause?: unknown }).cause, depth + 1)
}

/** A SqlError (or any error wrapping one) whose cause says the connection or the database was momentarily unavailable. */
export const isTransientSqlError = (error: SqlError.SqlError | unknown): boolean => transientCause(error, 0)

/** How long to wait before the one retry. */
export const TRANSIENT_RETRY_DELAY = "150 millis"

/**
 * Runs `self`, and once more after TRANSIENT_RETRY_DELAY when its error is one `retryable` accepts.
 * A catch, not `Effect.retry` with a schedule: that builds a schedule driver on every call, and
 * reads run this on every request.
 */
export const retryOnceWhen = <E>(retryable: (error: E) => boolean) => <A, E2 extends E, R>(self: Effect.Effect<A, E2, R>): Effect.Effect<A, E2, R> =>
  Effect.catchIf(self, retryable, () => Effect.zipRight(Effect.sleep(TRANSIENT_RETRY_DELAY), self))

/** Runs a statement, and once more after TRANSIENT_RETRY_DELAY when it failed transiently. */
export const retryTransient = <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> => retryOnceWhen(isTransientSqlError)(self)
