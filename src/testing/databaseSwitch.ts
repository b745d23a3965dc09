/**
 * The fleet's databases: in-memory SQLite with every migration applied, behind a switch the script
 * turns ("the database is unreachable from minute 9 to 10"). While it is off every statement, read
 * or write, BEGIN or COMMIT, fails with the error a lost connection gives (ECONNREFUSED), which
 * src/db/transient.ts counts as the database being away: the verifier's code meets exactly what it
 * meets when its real database goes, and nothing is written. The switch sits on the connection,
 * under @effect/sql's client, so transactions, reserved connections and the migrator all pass it.
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import { type Migrator, SqlClient, SqlError, Statement } from "@effect/sql"
import type { Connection } from "@effect/sql/SqlConnection"
import { SqliteClient } from "@effect/sql-sqlite-node"
import { Context, Effect, Layer, Scope, Stream } from "effect"
import { MigrationsLive } from "../db/migrate.js"
import { isTransientSqlError } from "../db/transient.js"

export interface DatabaseSwitchShape {
  /** From now on every statement fails as an unreachable database does. */
  readonly cut: Effect.Effect<void>
  readonly restore: Effect.Effect<void>
  readonly isCut: Effect.Effect<boolean>
}

export class DatabaseSwitch extends Context.Tag("attest/testing/DatabaseSwitch")<DatabaseSwitch, DatabaseSwitchShape>() {}

/** What a statement fails with while the switch is off: a connection refused, as node reports it. */
export const unreachableDatabase = (): SqlError.SqlError =>
  new SqlError.SqlError({
    cause: Object.assign(new Error("connect ECONNREFUSED: the database is unreachable (cut by the fleet's script)"), { code: "ECONNREFUSED" }),
    message: "Failed to execute statement"
  })

// the fleet's error must be one the verifier treats as an outage, or the test proves nothing
if (!isTransientSqlError(unreachableDatabase())) throw new Error("attest/testing: the cut database's error is not transient")

const guarded = (inner: Connection, state: { down: boolean }): Connection => {
  const gate = <A>(run: () => Effect.Effect<A, SqlError.SqlError>) => Effect.suspend(() => state.down ? Effect.fail(unreachableDatabase()) : run())
  return {
    execute: (sql, params, transform) => gate(() => inner.execute(sql, params, transform)),
    executeRaw: (sql, params) => gate(() => inner.executeRaw(sql, params)),
    executeValues: (sql, params) => gate(() => inner.executeValues(sql, params)),
    executeUnprepared: (sql, params, transform) => gate(() => inner.executeUnprepared(sql, params, transform)),
    executeStream: (sql, params, transform) =>
      Stream.unwrap(Effect.sync(() => state.down ? Stream.fail(unreachableDatabase()) : inner.executeStream(sql, params, transform)))
  }
}

/**
 * An in-memory SQLite SqlClient whose one connection passes the switch. The inner client's
 * connection is reserved for the layer's life (it has one, behind a semaphore); this client keeps
 * its own semaphore, as the SQLite client does, so statements and transactions take turns.
 */
const switchedSqlite = Effect.gen(function*() {
  const state = { down: false }
  const inner = yield* SqliteClient.make({ filename: ":memory:", disableWAL: true })
  const connection = guarded(yield* inner.reserve, state)
  const semaphore = yield* Effect.makeSemaphore(1)
  const transactionAcquirer = Effect.uninterruptibleMask((restore) =>
    Effect.as(
      Effect.zipRight(restore(semaphore.take(1)), Effect.tap(Effect.scope, (scope) => Scope.addFinalizer(scope, semaphore.release(1)))),
      connection
    )
  )
  const client = yield* SqlClient.make({
    acquirer: semaphore.withPermits(1)(Effect.succeed(connection)),
    transactionAcquirer,
    compiler: Statement.makeCompilerSqlite(),
    spanAttributes: [["db.system.name", "sqlite"]]
  })
  const control = DatabaseSwitch.of({
    cut: Effect.sync(() => void (state.down = true)),
    restore: Effect.sync(() => void (state.down = false)),
    isCut: Effect.sync(() => state.down)
  })
  return Context.make(SqlClient.SqlClient, client).pipe(Context.add(DatabaseSwitch, control))
})

/** SqlClient (migrated, foreign keys on) and its DatabaseSwitch. */
export const SwitchedDatabase: Layer.Layer<SqlClient.SqlClient | DatabaseSwitch, SqlError.SqlError | Migrator.MigrationError> = MigrationsLive.pipe(
  Layer.provideMerge(
    Layer.effectDiscard(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`PRAGMA foreign_keys = ON`))
  ),
  Layer.provideMerge(Layer.scopedContext(switchedSqlite)),
  Layer.provide(Reactivity.layer)
)
