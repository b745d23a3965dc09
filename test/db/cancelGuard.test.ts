/**
 * The cancel of an interrupted statement reaches that statement only (src/db/cancelGuard.ts). The
 * race it closes, made deterministic on a pool of two: statement A runs on connection X, a reserved
 * connection holds Y, a transaction B waits for a connection; A is interrupted, so @effect/sql-pg
 * queues `pg_cancel_backend(X)` behind B; A then answers, X goes to B, and when Y comes free the
 * cancel ran on X and killed B's statement with 57014 "canceling statement due to user request"
 * (what failed agent adds with a 500 while a second cluster runner took shards over). Guarded, B
 * commits, and a cancel that still applies (a long statement interrupted) still stops it.
 */
import { SqlClient, type SqlError } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Deferred, Duration, Effect, Either, Fiber, Layer, Option, Schedule } from "effect"
import Pg from "pg"
import { DbLive } from "../../src/db/Sql.js"
import { scrapePrometheus } from "../../src/ops/prometheus.js"
import { testDatabase } from "../support/db.js"
import { parseExposition, valueOf } from "../support/prometheus.js"
import { needsPostgres, postgresUrl } from "../support/requirements.js"

const pgAvailable = await needsPostgres()

/** Another connection, outside the pool under test: what the server is running. */
const observer = Effect.acquireRelease(
  Effect.promise(async () => {
    const client = new Pg.Client({ connectionString: postgresUrl })
    await client.connect()
    return client
  }),
  (client) => Effect.promise(() => client.end())
)

const activeWith = (client: Pg.Client, marker: string) =>
  Effect.promise(() =>
    client.query<{ n: string }>(`SELECT COUNT(*) AS n FROM pg_stat_activity WHERE state = 'active' AND query LIKE $1`, [`%${marker}%`])
  ).pipe(Effect.map((r) => Number(r.rows[0]!.n)))

const until = <A>(check: Effect.Effect<A>, ok: (a: A) => boolean, bound: Duration.DurationInput) =>
  check.pipe(Effect.filterOrFail(ok), Effect.retry(Schedule.spaced("20 millis")), Effect.timeout(bound), Effect.either)

const waiting = (component: string) =>
  Effect.map(scrapePrometheus, (text) => valueOf(parseExposition(text), "attest_db_pool_connections", { database: component, state: "waiting" }) ?? 0)

describe.skipIf(!pgAvailable)("cancels of interrupted statements on PostgreSQL", () => {
  it.scopedLive("a late cancel does not kill the statement of the transaction that got the connection next", () =>
    Effect.gen(function*() {
      const options = yield* testDatabase("pg")
      const watch = yield* observer
      const marker = `m${Math.random().toString(36).slice(2, 10)}`
      const component = `cancel-guard-${marker}`
      yield* Effect.scoped(Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        // Y: held until the scenario lets it go, so the pool (of two) is full
        const letGo = yield* Deferred.make<void>()
        const holding = yield* Deferred.make<void>()
        yield* Effect.forkScoped(Effect.scoped(Effect.gen(function*() {
          yield* sql.reserve
          yield* Deferred.succeed(holding, undefined)
          yield* Deferred.await(letGo)
        })))
        yield* Deferred.await(holding)
        // A on X
        const a = yield* Effect.fork(sql`SELECT pg_sleep(1) AS ${sql.literal(`a_${marker}`)}`)
        expect(yield* until(activeWith(watch, `a_${marker}`), (n) => n === 1, "60 seconds")).toEqual(Either.right(1))
        // B waits for a connection, first in the queue
        const b = yield* Effect.fork(sql.withTransaction(sql<{ ok: number }>`SELECT 1 AS ok, pg_sleep(1.5) AS ${sql.literal(`b_${marker}`)}`))
        expect(yield* until(waiting(component), (n) => n === 1, "60 seconds")).toEqual(Either.right(1))
        // A interrupted while it runs: its cancel waits behind B for a connection
        yield* Effect.fork(Fiber.interrupt(a))
        expect(yield* until(waiting(component), (n) => n === 2, "60 seconds")).toEqual(Either.right(2))
        // A answers (the cancel has not gone out), then Y comes free once B runs on X, or after 2 s if X is held
        // back (guarded: sooner than the guard lets go of X, CANCEL_HOLD_MS)
        expect(yield* until(activeWith(watch, `a_${marker}`), (n) => n === 0, "60 seconds")).toEqual(Either.right(0))
        yield* until(activeWith(watch, `b_${marker}`), (n) => n === 1, "2 seconds")
        yield* Deferred.succeed(letGo, undefined)
        const exit = yield* Fiber.await(b).pipe(Effect.timeout("60 seconds"))
        // PostgreSQL's answer, when B failed (57014 canceling statement due to user request, unguarded)
        const failure = exit._tag === "Failure"
          ? Option.match(Cause.failureOption(exit.cause), {
            onNone: () => Cause.pretty(exit.cause),
            onSome: (e: SqlError.SqlError) => {
              const pg = e.cause as { readonly code?: string; readonly message?: string }
              return `${pg.code} ${pg.message}`
            }
          })
          : ""
        expect(failure).toEqual("")
        expect(exit._tag === "Success" && exit.value).toEqual([{ ok: 1, [`b_${marker}`]: "" }])
      }).pipe(Effect.provide(Layer.fresh(DbLive({ ...options, database_pool_max: 2 }, component)))))
    }), { timeout: 120_000 })

  it.scopedLive("an interrupted statement that still runs is cancelled on the server, pooled or in a transaction", () =>
    Effect.gen(function*() {
      const options = yield* testDatabase("pg")
      const watch = yield* observer
      const marker = `m${Math.random().toString(36).slice(2, 10)}`
      yield* Effect.scoped(Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        // a pooled statement, and one in a transaction (its connection reserved)
        for (const [name, statement] of [
          ["pooled", sql`SELECT pg_sleep(60) AS ${sql.literal(`pooled_${marker}`)}`],
          ["transaction", sql.withTransaction(sql`SELECT pg_sleep(60) AS ${sql.literal(`transaction_${marker}`)}`)]
        ] as const) {
          const long = yield* Effect.fork(statement)
          expect([name, yield* until(activeWith(watch, `${name}_${marker}`), (n) => n === 1, "60 seconds")]).toEqual([name, Either.right(1)])
          yield* Fiber.interrupt(long)
          // well before its 60 s: the server stopped it
          expect([name, yield* until(activeWith(watch, `${name}_${marker}`), (n) => n === 0, "30 seconds")]).toEqual([name, Either.right(0)])
        }
      }).pipe(Effect.provide(Layer.fresh(DbLive({ ...options, database_pool_max: 2 }, `cancel-guard-long-${marker}`)))))
    }), { timeout: 120_000 })
})
