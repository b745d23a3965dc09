/**
 * Schema changes made by one process at a time on PostgreSQL. @effect/sql's Migrator (attest's own
 * migrations, and @effect/cluster's message storage) creates its migrations table after
 * `SELECT '<table>'::regclass` finds none, with no lock: two processes starting at the same instant
 * on a fresh database both CREATE it and PostgreSQL refuses the second ("duplicate key value
 * violates unique constraint pg_type_typname_nsp_index", or "relation … already exists"), so one of
 * them stops at start. @effect/cluster's SqlRunnerStorage has the same race on its CREATE TABLE IF
 * NOT EXISTS. Here the work runs while holding a session advisory lock on a connection of its own:
 * the second process waits for the first to finish, then finds the tables made. The lock is released
 * when the work is done (and by PostgreSQL if the process dies holding it). The work needs a second
 * connection, so a pool of one would wait for itself: Sql.ts refuses it (PG_POOL_MIN). On SQLite,
 * one file of one process, the work simply runs.
 *
 *   oneAtATime("attest migrations", runMigrations)
 *   builtOneAtATime("cluster tables", Layer.merge(SqlMessageStorage.layer, SqlRunnerStorage.layer))
 */
import { SqlClient, type SqlError } from "@effect/sql"
import { Effect, Hash, Layer, type Scope } from "effect"

/** pg_advisory_lock's two-key form (apart from @effect/cluster's one-key shard locks): "attest", then the work's name. */
const ATTEST_KEY = 0x61747374
const keysOf = (name: string) => `${ATTEST_KEY}, ${Hash.string(name) | 0}`

const locked = <A, E, R>(name: string, work: Effect.Effect<A, E, R>) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.onDialectOrElse({
      pg: () =>
        Effect.scoped(
          Effect.gen(function*() {
            // a connection of its own: a session lock, and the work's statements may use any pooled one
            const conn = yield* sql.reserve
            yield* conn.executeRaw(`SELECT pg_advisory_lock(${keysOf(name)})`, [])
            yield* Effect.addFinalizer(() => Effect.ignore(conn.executeRaw(`SELECT pg_advisory_unlock(${keysOf(name)})`, [])))
            return yield* work
          })
        ),
      orElse: () => work
    }))

/** `work` run while no other process on this PostgreSQL database runs the work of that name. */
export const oneAtATime = <A, E, R>(name: string, work: Effect.Effect<A, E, R>): Effect.Effect<A, E | SqlError.SqlError, R | SqlClient.SqlClient> =>
  locked(name, work)

/** `layer` built while no other process on this PostgreSQL database builds the layer of that name; it lives as long as the returned layer. */
export const builtOneAtATime = <A, E, R>(
  name: string,
  layer: Layer.Layer<A, E, R>
): Layer.Layer<A, E | SqlError.SqlError, Exclude<R, Scope.Scope> | SqlClient.SqlClient> =>
  Layer.scopedContext(Effect.flatMap(Effect.scope, (scope) => locked(name, Layer.buildWithScope(layer, scope))))
