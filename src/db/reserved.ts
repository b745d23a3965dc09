/**
 * Statements on one reserved connection, for the few that every attestation runs. The sql template
 * takes SQLite's connection permit (or a pg pool slot), opens a scope and a span and compiles its
 * text for each statement: measured ~30 µs of CPU a statement, more than SQLite's own work on a
 * one-row update. Here a group of statements takes the connection once, and each statement's text
 * is compiled once, when the repository is made.
 *
 *   const update = compiled(sql`UPDATE t SET n = ${0} WHERE id = ${""}`)   // placeholders, in order
 *   onReservedConnection(sql, (c) => c.run(update, [n, id]))
 *
 * Inside a group only `c.run` may touch the database: a sql template statement would wait for the
 * permit the group holds (SQLite). A group started inside `sql.withTransaction` runs on the
 * transaction's connection and is part of it.
 */
import { SqlClient, type SqlConnection, type SqlError, type Statement } from "@effect/sql"
import { Effect, Exit, Option } from "effect"

/** A statement's text with the dialect's placeholders, its parameters given at each run in the order of the template's interpolations. */
export interface Compiled {
  readonly text: string
  readonly placeholders: number
}

/** The text of a template statement, compiled once (the values interpolated only count placeholders). */
export const compiled = (statement: Statement.Statement<unknown>): Compiled => {
  const [text, params] = statement.compile()
  return { text, placeholders: params.length }
}

export interface ReservedConnection {
  /** Runs a compiled statement with its parameters; rows as the driver returns them. */
  readonly run: (statement: Compiled, params: ReadonlyArray<unknown>) => Effect.Effect<ReadonlyArray<Record<string, unknown>>, SqlError.SqlError>
  /**
   * BEGIN … COMMIT around `body`, ROLLBACK when it fails, is interrupted or COMMIT fails. Inside an
   * outer sql.withTransaction the body is simply part of that transaction.
   */
  readonly transaction: <A, E, R>(body: Effect.Effect<A, E, R>) => Effect.Effect<A, E | SqlError.SqlError, R>
}

const BEGIN: Compiled = { text: "BEGIN", placeholders: 0 }
const COMMIT: Compiled = { text: "COMMIT", placeholders: 0 }
const ROLLBACK: Compiled = { text: "ROLLBACK", placeholders: 0 }

const reservedOn = (connection: SqlConnection.Connection, outerTransaction: boolean): ReservedConnection => {
  const run = (statement: Compiled, params: ReadonlyArray<unknown>) => {
    // a wrong count would bind the wrong values to the wrong columns: a defect of the caller
    if (params.length !== statement.placeholders) {
      return Effect.dieMessage(`statement needs ${statement.placeholders} parameters, got ${params.length}: ${statement.text}`)
    }
    return connection.execute(statement.text, params, undefined) as Effect.Effect<ReadonlyArray<Record<string, unknown>>, SqlError.SqlError>
  }
  const transaction = <A, E, R>(body: Effect.Effect<A, E, R>): Effect.Effect<A, E | SqlError.SqlError, R> => {
    if (outerTransaction) return body
    const rollback = Effect.ignore(run(ROLLBACK, []))
    return Effect.uninterruptibleMask((restore) =>
      Effect.zipRight(
        run(BEGIN, []),
        Effect.flatMap(Effect.exit(restore(body)), (exit): Effect.Effect<A, E | SqlError.SqlError> =>
          Exit.isSuccess(exit)
            ? Effect.as(Effect.tapErrorCause(run(COMMIT, []), () => rollback), exit.value)
            : Effect.zipRight(rollback, exit))
      )
    )
  }
  return { run, transaction }
}

/** `body` on one connection, taken once for all its statements (see the module's comment). */
export const onReservedConnection = <A, E, R>(
  sql: SqlClient.SqlClient,
  body: (connection: ReservedConnection) => Effect.Effect<A, E, R>
): Effect.Effect<A, E | SqlError.SqlError, R> =>
  Effect.flatMap(Effect.serviceOption(SqlClient.TransactionConnection), (outer) =>
    Option.isSome(outer)
      ? body(reservedOn(outer.value[0], true))
      : Effect.scoped(Effect.flatMap(sql.reserve, (connection) => body(reservedOn(connection, false)))))
