/**
 * The SQL backend chosen from a component's config: SQLite (a file under `data_dir`, WAL mode)
 * unless `database_url` is a `postgres://` URL. Column names are used as written (snake_case,
 * no name transforms) in every layer, so rows read the same on both backends.
 *
 *   DbLive({ database_url, data_dir }, "registrar")   // SqlClient with all migrations applied
 */
import { SqlClient, SqlError } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { SqliteClient } from "@effect/sql-sqlite-node"
import { Cause, Effect, Layer, Redacted, Schema } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import Pg from "pg"
import { watchDbPool } from "../ops/metrics.js"
import { guardCancels } from "./cancelGuard.js"
import { MigrationsLive } from "./migrate.js"

export interface DatabaseOptions {
  /** "" → SQLite under data_dir; `sqlite:<file>` (or `sqlite::memory:`); `postgres://…` / `postgresql://…`. */
  readonly database_url: string
  readonly data_dir: string
  /** PostgreSQL: the most connections the pool opens (`database_pool_max`; 10 when not given). */
  readonly database_pool_max?: number | undefined
}

/** The pool bound when a caller gives none (the option's default). */
export const DEFAULT_POOL_MAX = 10

/**
 * The smallest pool that can start on PostgreSQL: the migrations run while one connection holds the
 * start lock (startLock.ts), so a pool of one waits for itself forever.
 */
export const PG_POOL_MIN = 2

/** Bad `database_url` or an unusable data directory: a start-up error that names the option. */
export class DatabaseConfigError extends Schema.TaggedError<DatabaseConfigError>()("DatabaseConfigError", {
  message: Schema.String
}) {}

export type Backend =
  | { readonly _tag: "sqlite"; readonly filename: string }
  | { readonly _tag: "pg"; readonly url: Redacted.Redacted<string> }

/** Which backend a config selects (pure). */
export const chooseBackend = (o: DatabaseOptions, component: string): Backend | DatabaseConfigError => {
  const url = o.database_url.trim()
  if (url === "") return { _tag: "sqlite", filename: path.join(o.data_dir, `${component}.sqlite`) }
  if (url.startsWith("sqlite:")) {
    const file = url.slice("sqlite:".length).replace(/^\/\//, "")
    return file === "" ? new DatabaseConfigError({ message: "database_url sqlite: needs a file name" }) : { _tag: "sqlite", filename: file }
  }
  if (/^postgres(ql)?:\/\//.test(url)) return { _tag: "pg", url: Redacted.make(url) }
  return new DatabaseConfigError({
    message: `database_url must be empty (SQLite under data_dir), sqlite:<file> or postgres://…; got ${url.replace(/(\/\/[^:/@]+:)[^@]*@/, "$1***@")}`
  })
}

const sqliteLayer = (filename: string, component: string): Layer.Layer<SqlClient.SqlClient, DatabaseConfigError | SqlError.SqlError> =>
  Layer.unwrapEffect(
    Effect.gen(function*() {
      if (filename !== ":memory:") {
        yield* Effect.try({
          try: () => fs.mkdirSync(path.dirname(filename), { recursive: true, mode: 0o700 }),
          catch: (cause) => new DatabaseConfigError({ message: `cannot create the data directory for ${filename}: ${String(cause)}` })
        })
        // a read-only or foreign directory: said at start, naming it, rather than SQLITE_CANTOPEN later
        yield* Effect.try({
          try: () => fs.accessSync(path.dirname(filename), fs.constants.W_OK),
          catch: (cause) =>
            new DatabaseConfigError({
              message: `the data directory ${path.dirname(filename)} is not writable (${(cause as NodeJS.ErrnoException).code ?? String(cause)}); ${component}'s SQLite database ${path.basename(filename)} lives there (data_dir, or database_url)`
            })
        })
      }
      // WAL is the client's default; foreign keys are off by default in SQLite, on in pg.
      // synchronous = NORMAL, SQLite's advice for WAL: a commit no longer waits for an fsync (a
      // checkpoint still syncs), so the database stays consistent through any crash, and only
      // the last commits before a power cut can be lost; FULL made each write ~6x the CPU and held
      // the event loop ~0.2 ms per write.
      const pragmas = Layer.effectDiscard(
        Effect.flatMap(SqlClient.SqlClient, (sql) => Effect.zipRight(sql`PRAGMA foreign_keys = ON`, sql`PRAGMA synchronous = NORMAL`))
      )
      const client = SqliteClient.layer({ filename }).pipe(
        // better-sqlite3 throws on open (a defect to the layer): both are a start-up error naming the file
        Layer.catchAllCause((cause) => Layer.fail(new DatabaseConfigError({ message: `SQLite ${filename}: ${Cause.pretty(cause).split("\n")[0]}` })))
      )
      // one connection, always held: reported so a dashboard shows the same series on both backends
      const watched = Layer.scopedDiscard(
        Effect.acquireRelease(Effect.sync(() => watchDbPool(component, () => ({ total: 1, idle: 0, waiting: 0 }))), (unwatch) => Effect.sync(unwatch))
      )
      return Layer.mergeAll(pragmas, watched).pipe(Layer.provideMerge(client))
    })
  )

/**
 * PostgreSQL through a `pg.Pool` this layer owns (PgClient would keep its own private), so its use
 * (connections total, idle, clients waiting) is read at every metrics scrape. The pool is bounded
 * (`database_pool_max`): a process never opens more connections, however many requests and loops
 * wait (they queue for a free one), so N processes open at most N times the bound.
 */
const pgLayer = (url: Redacted.Redacted<string>, component: string, max: number) =>
  PgClient.layerFromPool({
    applicationName: "attest",
    acquire: Effect.acquireRelease(
      Effect.gen(function*() {
        // guarded: @effect/sql-pg's cancel of an interrupted statement could hit the next user of its connection
        const pool = guardCancels(new Pg.Pool({ connectionString: Redacted.value(url), max, application_name: "attest" }))
        // errors of idle connections surface on the next query; unhandled, they would end the process
        pool.on("error", () => {})
        yield* Effect.tryPromise({
          try: () => pool.query("SELECT 1"),
          catch: (cause) => new SqlError.SqlError({ cause, message: "PgClient: Failed to connect" })
        }).pipe(
          Effect.timeoutFail({ duration: "5 seconds", onTimeout: () => new SqlError.SqlError({ cause: new Error("Connection timed out"), message: "PgClient: Connection timed out" }) }),
          Effect.tapError(() => Effect.promise(() => pool.end()))
        )
        const unwatch = watchDbPool(component, () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }))
        return { pool, unwatch }
      }),
      ({ pool, unwatch }) => Effect.sync(unwatch).pipe(Effect.zipRight(Effect.promise(() => pool.end()).pipe(Effect.timeoutOption(1000))))
    ).pipe(Effect.map(({ pool }) => pool))
  })

/** The SqlClient for a component's database options (no migrations). */
export const SqlLive = (o: DatabaseOptions, component: string): Layer.Layer<SqlClient.SqlClient, DatabaseConfigError | SqlError.SqlError> => {
  const backend = chooseBackend(o, component)
  if (backend instanceof DatabaseConfigError) return Layer.fail(backend)
  const max = o.database_pool_max ?? DEFAULT_POOL_MAX
  if (!Number.isSafeInteger(max) || max < 1) return Layer.fail(new DatabaseConfigError({ message: `database_pool_max must be a whole number of connections, at least 1; got ${max}` }))
  if (backend._tag === "sqlite") return sqliteLayer(backend.filename, component)
  if (max < PG_POOL_MIN) {
    return Layer.fail(
      new DatabaseConfigError({
        message:
          `database_pool_max must be at least ${PG_POOL_MIN} on PostgreSQL (one connection holds the start lock while the migrations run on another); got ${max}`
      })
    )
  }
  return pgLayer(backend.url, component, max)
}

/** SqlClient with every migration applied. */
export const DbLive = (o: DatabaseOptions, component: string) => MigrationsLive.pipe(Layer.provideMerge(SqlLive(o, component)))
