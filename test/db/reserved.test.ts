/**
 * Statements on one reserved connection (src/db/reserved.ts), on SQLite and PostgreSQL: compiled
 * text runs with its parameters in template order; a transaction commits, and rolls back when its
 * body fails or its COMMIT fails; a wrong parameter count is a defect that binds nothing; a group
 * inside sql.withTransaction is part of that transaction; other fibers' statements wait for the
 * group on SQLite and are not lost.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Exit, Fiber, Option } from "effect"
import { DbLive } from "../../src/db/Sql.js"
import { compiled, onReservedConnection } from "../../src/db/reserved.js"
import { testDatabase, type TestBackend } from "../support/db.js"
import { needsPostgres } from "../support/requirements.js"

const pgOk = await needsPostgres()
const backends: ReadonlyArray<[TestBackend, boolean]> = [["sqlite", true], ["pg", pgOk]]

class Refused {
  readonly _tag = "Refused"
}

const withTable = <A, E>(backend: TestBackend, body: (sql: SqlClient.SqlClient) => Effect.Effect<A, E, SqlClient.SqlClient>) =>
  Effect.gen(function*() {
    const o = yield* testDatabase(backend)
    return yield* Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql`CREATE TABLE counters (id TEXT PRIMARY KEY, n BIGINT NOT NULL, note TEXT)`
      return yield* body(sql)
    }).pipe(Effect.provide(DbLive(o, "test")))
  })

const countersOf = (sql: SqlClient.SqlClient) =>
  Effect.map(sql<{ id: string; n: unknown; note: string | null }>`SELECT id, n, note FROM counters ORDER BY id`, (rows) => rows.map((r) => [r.id, Number(r.n), r.note]))

for (const [backend, available] of backends) {
  describe.skipIf(!available)(`reserved connection on ${backend}`, () => {
    it.scoped("runs compiled statements with their parameters in template order", () =>
      withTable(backend, (sql) =>
        Effect.gen(function*() {
          const insert = compiled(sql`INSERT INTO counters (id, n, note) VALUES (${""}, ${0}, ${""}) ON CONFLICT (id) DO NOTHING RETURNING id`)
          const bump = compiled(sql`UPDATE counters SET n = n + ${0} WHERE id = ${""}`)
          expect(insert.placeholders).toEqual(3)
          const inserted = yield* onReservedConnection(sql, (c) =>
            Effect.gen(function*() {
              const first = yield* c.run(insert, ["a", 1, "first"])
              const again = yield* c.run(insert, ["a", 5, "again"])
              yield* c.run(bump, [10, "a"])
              return [first.length, again.length]
            }))
          expect(inserted).toEqual([1, 0])
          expect(yield* countersOf(sql)).toEqual([["a", 11, "first"]])
        })))

    it.scoped("commits a transaction, and rolls it back when its body fails", () =>
      withTable(backend, (sql) =>
        Effect.gen(function*() {
          const insert = compiled(sql`INSERT INTO counters (id, n) VALUES (${""}, ${0})`)
          yield* onReservedConnection(sql, (c) => c.transaction(Effect.zipRight(c.run(insert, ["kept", 1]), c.run(insert, ["kept too", 2]))))
          const failed = yield* Effect.exit(onReservedConnection(sql, (c) => c.transaction(Effect.zipRight(c.run(insert, ["lost", 3]), Effect.fail(new Refused())))))
          expect(Exit.isFailure(failed) ? Cause.failureOption(failed.cause) : undefined).toEqual(Option.some(new Refused()))
          // a statement that fails inside the transaction (duplicate key) undoes the ones before it
          const duplicate = yield* Effect.exit(onReservedConnection(sql, (c) => c.transaction(Effect.zipRight(c.run(insert, ["lost too", 4]), c.run(insert, ["kept", 5])))))
          expect(Exit.isFailure(duplicate)).toEqual(true)
          expect(yield* countersOf(sql)).toEqual([["kept", 1, null], ["kept too", 2, null]])
          // the connection is usable again after each rollback
          yield* onReservedConnection(sql, (c) => c.transaction(c.run(insert, ["after", 6])))
          expect((yield* countersOf(sql)).map((r) => r[0])).toEqual(["after", "kept", "kept too"])
        })))

    it.scoped("refuses a wrong parameter count as a defect, binding nothing", () =>
      withTable(backend, (sql) =>
        Effect.gen(function*() {
          const insert = compiled(sql`INSERT INTO counters (id, n) VALUES (${""}, ${0})`)
          const exit = yield* Effect.exit(onReservedConnection(sql, (c) => c.run(insert, ["only the id"])))
          expect(Exit.isFailure(exit) && Cause.isDie(exit.cause)).toEqual(true)
          expect(Exit.isFailure(exit) ? Cause.pretty(exit.cause) : "").toContain("statement needs 2 parameters, got 1")
          expect(yield* countersOf(sql)).toEqual([])
        })))

    it.scoped("inside sql.withTransaction, a group is part of the outer transaction", () =>
      withTable(backend, (sql) =>
        Effect.gen(function*() {
          const insert = compiled(sql`INSERT INTO counters (id, n) VALUES (${""}, ${0})`)
          const exit = yield* Effect.exit(sql.withTransaction(Effect.gen(function*() {
            yield* sql`INSERT INTO counters (id, n) VALUES ('outer', 1)`
            yield* onReservedConnection(sql, (c) => c.transaction(c.run(insert, ["inner", 2])))
            return yield* Effect.fail(new Refused())
          })))
          expect(Exit.isFailure(exit)).toEqual(true)
          expect(yield* countersOf(sql)).toEqual([])
          yield* sql.withTransaction(onReservedConnection(sql, (c) => c.run(insert, ["inner", 2])))
          expect(yield* countersOf(sql)).toEqual([["inner", 2, null]])
        })))

    it.scoped("statements of other fibers run after a group, none lost", () =>
      withTable(backend, (sql) =>
        Effect.gen(function*() {
          const insert = compiled(sql`INSERT INTO counters (id, n) VALUES (${""}, ${0})`)
          const bump = compiled(sql`UPDATE counters SET n = n + 1 WHERE id = ${""}`)
          yield* onReservedConnection(sql, (c) => c.run(insert, ["shared", 0]))
          const groups = Effect.forEach(Array.from({ length: 20 }, (_, i) => i), () =>
            onReservedConnection(sql, (c) => c.transaction(Effect.zipRight(c.run(bump, ["shared"]), c.run(bump, ["shared"])))), { concurrency: 5 })
          const templates = Effect.forEach(Array.from({ length: 20 }, (_, i) => i), () => sql`UPDATE counters SET n = n + 1 WHERE id = ${"shared"}`, { concurrency: 5 })
          const fibers = yield* Effect.all([Effect.fork(groups), Effect.fork(templates)])
          yield* Fiber.join(Fiber.zip(fibers[0], fibers[1]))
          expect(yield* countersOf(sql)).toEqual([["shared", 60, null]])
        })))
  })
}
