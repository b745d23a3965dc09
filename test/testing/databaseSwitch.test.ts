/**
 * The fleet's database switch: while cut, every statement (read, write, a transaction's BEGIN)
 * (as the verifier opens it: inTransaction) fails with an error src/db/transient.ts counts as the database being away, and nothing is
 * written; restored, the same connection answers with everything written before the cut.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import { inTransaction } from "../../src/db/transaction.js"
import { isTransientSqlError } from "../../src/db/transient.js"
import { DatabaseSwitch, SwitchedDatabase } from "../../src/testing/index.js"

describe("attest/testing database switch", () => {
  it.effect("fails every statement as an outage while cut, and answers again when restored", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const db = yield* DatabaseSwitch
      yield* sql`CREATE TABLE t (n INTEGER)`
      yield* sql`INSERT INTO t (n) VALUES (1)`
      yield* db.cut
      const read = yield* Effect.either(sql`SELECT n FROM t`)
      const write = yield* Effect.either(sql`INSERT INTO t (n) VALUES (2)`)
      const transaction = yield* Effect.either(inTransaction(sql, sql`INSERT INTO t (n) VALUES (3)`))
      for (const attempt of [read, write, transaction]) {
        expect(Either.isLeft(attempt) && isTransientSqlError(attempt.left)).toBe(true)
      }
      expect(yield* db.isCut).toBe(true)
      yield* db.restore
      expect(yield* sql<{ n: number }>`SELECT n FROM t ORDER BY n`).toEqual([{ n: 1 }])
    }).pipe(Effect.provide(SwitchedDatabase)))
})
