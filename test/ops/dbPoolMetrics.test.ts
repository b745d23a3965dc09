/**
 * `attest_db_pool_connections`: the SQL layer's pool as each scrape sees it. PostgreSQL: queries in
 * flight hold connections (total rises, nobody idle while they run); SQLite: its one connection.
 * A closed layer stops reporting its pool.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Fiber, Layer, Schedule } from "effect"
import { DbLive } from "../../src/db/Sql.js"
import { scrapePrometheus } from "../../src/ops/prometheus.js"
import { testDatabase } from "../support/db.js"
import { parseExposition, valueOf } from "../support/prometheus.js"
import { needsPostgres } from "../support/requirements.js"

const pool = (database: string) =>
  Effect.map(scrapePrometheus, (text) => {
    const parsed = parseExposition(text)
    const v = (state: string) => valueOf(parsed, "attest_db_pool_connections", { database, state })
    return { total: v("total"), idle: v("idle"), waiting: v("waiting") }
  })

describe("database pool metrics", () => {
  it.scopedLive("SQLite reports its one connection", () =>
    Effect.gen(function*() {
      const options = yield* testDatabase("sqlite")
      yield* Effect.scoped(Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* sql`SELECT 1`
        expect(yield* pool("pool-sqlite")).toEqual({ total: 1, idle: 0, waiting: 0 })
      }).pipe(Effect.provide(Layer.fresh(DbLive(options, "pool-sqlite")))))
    }), { timeout: 60_000 })

  it.scopedLive("PostgreSQL reports connections held by queries in flight, then idle ones", () =>
    Effect.gen(function*() {
      if (!(yield* Effect.promise(needsPostgres))) return
      const options = yield* testDatabase("pg")
      yield* Effect.scoped(Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const busy = yield* Effect.fork(Effect.all([1, 2, 3].map(() => sql`SELECT pg_sleep(1)`), { concurrency: "unbounded" }))
        // the three queries each hold a connection while they sleep (wait for them, generously)
        const during = yield* pool("pool-pg").pipe(
          Effect.filterOrFail((p) => (p.total ?? 0) >= 3 && (p.idle ?? 0) === 0),
          Effect.retry(Schedule.spaced(Duration.millis(20))),
          Effect.timeout("60 seconds")
        )
        expect(during.total).toBeGreaterThanOrEqual(3)
        yield* Fiber.join(busy)
        const after = yield* pool("pool-pg")
        expect({ idle: (after.idle ?? 0) >= 3, waiting: after.waiting }).toEqual({ idle: true, waiting: 0 })
      }).pipe(Effect.provide(Layer.fresh(DbLive(options, "pool-pg")))))
    }), { timeout: 120_000 })
})
