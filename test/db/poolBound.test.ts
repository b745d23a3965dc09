/**
 * `database_pool_max` bounds a process's PostgreSQL pool: more queries than the bound wait for a
 * connection (the pool never opens more), and all of them complete. A bound that cannot start is
 * refused at start, naming the option and its minimum: below 1 anywhere, below 2 on PostgreSQL (the
 * start lock holds one connection while the migrations need another: a pool of one waited for
 * itself forever), below 3 in cluster mode (the engine's shard locks keep one more).
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Exit, Fiber, Layer, Schedule } from "effect"
import { verifierSection } from "../../src/config/sections.js"
import { sectionDefaults } from "../../src/config/load.js"
import { DbLive } from "../../src/db/Sql.js"
import { clusterRefusal } from "../../src/verifier/pull/cluster/runner.js"
import { scrapePrometheus } from "../../src/ops/prometheus.js"
import { testDatabase } from "../support/db.js"
import { parseExposition, valueOf } from "../support/prometheus.js"
import { needsPostgres } from "../support/requirements.js"

const pgAvailable = await needsPostgres()

const pool = (database: string) =>
  Effect.map(scrapePrometheus, (text) => {
    const parsed = parseExposition(text)
    const v = (state: string) => valueOf(parsed, "attest_db_pool_connections", { database, state }) ?? 0
    return { total: v("total"), waiting: v("waiting") }
  })

describe.skipIf(!pgAvailable)("database_pool_max on PostgreSQL", () => {
  it.scopedLive("five queries at once on a pool of two: two connections, three waiting, all answered", () =>
    Effect.gen(function*() {
      const options = yield* testDatabase("pg")
      yield* Effect.scoped(Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const busy = yield* Effect.fork(Effect.all([1, 2, 3, 4, 5].map(() => sql`SELECT pg_sleep(0.5)`), { concurrency: "unbounded" }))
        const during = yield* pool("pool-bound").pipe(
          Effect.filterOrFail((p) => p.waiting >= 3),
          Effect.retry(Schedule.spaced(Duration.millis(20))),
          Effect.timeout("60 seconds")
        )
        expect(during).toEqual({ total: 2, waiting: 3 })
        expect((yield* Fiber.join(busy)).length).toBe(5)
      }).pipe(Effect.provide(Layer.fresh(DbLive({ ...options, database_pool_max: 2 }, "pool-bound")))))
    }), { timeout: 120_000 })

  it.scopedLive("a bound below one is refused, naming the option", () =>
    Effect.gen(function*() {
      const options = yield* testDatabase("pg")
      const exit = yield* Effect.exit(Effect.scoped(Layer.build(DbLive({ ...options, database_pool_max: 0 }, "pool-zero"))))
      expect(Exit.isFailure(exit) && String(exit.cause)).toMatch(/database_pool_max must be .* at least 1; got 0/)
    }))

  it.scopedLive("a bound of one is refused at start on PostgreSQL, naming the option and the minimum", () =>
    Effect.gen(function*() {
      const options = yield* testDatabase("pg")
      const exit = yield* Effect.exit(Effect.scoped(Layer.build(DbLive({ ...options, database_pool_max: 1 }, "pool-one"))).pipe(Effect.timeout("60 seconds")))
      expect(Exit.isFailure(exit) && String(exit.cause)).toMatch(/database_pool_max must be at least 2 on PostgreSQL .*; got 1/)
    }))

  it("cluster mode refuses a bound below three, naming the option and the minimum", () => {
    const section = (database_pool_max: number) =>
      sectionDefaults(verifierSection, { cluster: true, database_url: "postgres://127.0.0.1/x", database_pool_max })
    expect(clusterRefusal(section(2))?.message).toMatch(/cluster = true needs database_pool_max of at least 3 .*; got 2/)
    expect(clusterRefusal(section(3))).toEqual(undefined)
  })
})
