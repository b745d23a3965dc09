/**
 * PostgreSQL's own errors for a statement that waited too long for a lock (55P03) or was cancelled
 * (57014: a statement_timeout, pg_cancel_backend) count as transient (src/db/transient.ts: the
 * routes answer 503 with Retry-After, reads are tried once more); a unique violation does not.
 * Real errors of a real server, as @effect/sql-pg wraps them.
 */
import { SqlClient, type SqlError } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import Pg from "pg"
import { DbLive } from "../../src/db/Sql.js"
import { isTransientSqlError } from "../../src/db/transient.js"
import { codeOf } from "../../src/ops/errorText.js"
import { testDatabase } from "../support/db.js"
import { needsPostgres, postgresUrl } from "../support/requirements.js"

const pgAvailable = await needsPostgres()

const classified = (e: SqlError.SqlError) => ({ code: codeOf(e), transient: isTransientSqlError(e) })

describe.skipIf(!pgAvailable)("transient PostgreSQL errors", () => {
  it.scopedLive("lock timeout and cancelled statements are transient, a unique violation is not", () =>
    Effect.gen(function*() {
      const options = yield* testDatabase("pg")
      const key = Math.floor(Math.random() * 1_000_000_000)
      // another session holds the advisory lock the statement under test waits for
      yield* Effect.acquireRelease(
        Effect.promise(async () => {
          const c = new Pg.Client({ connectionString: postgresUrl })
          await c.connect()
          await c.query(`SELECT pg_advisory_lock(${key})`)
          return c
        }),
        (c) => Effect.promise(() => c.end())
      )
      yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const lockTimeout = yield* Effect.flip(sql.withTransaction(
          Effect.zipRight(sql`SET LOCAL lock_timeout = '50ms'`, sql`SELECT pg_advisory_xact_lock(${sql.literal(String(key))})`)
        ))
        const statementTimeout = yield* Effect.flip(sql.withTransaction(
          Effect.zipRight(sql`SET LOCAL statement_timeout = '50ms'`, sql`SELECT pg_sleep(5)`)
        ))
        yield* sql`CREATE TABLE transient_codes (id integer PRIMARY KEY)`
        yield* sql`INSERT INTO transient_codes VALUES (1)`
        const duplicate = yield* Effect.flip(sql`INSERT INTO transient_codes VALUES (1)`)
        expect([lockTimeout, statementTimeout, duplicate].map(classified)).toEqual([
          { code: "55P03", transient: true },
          { code: "57014", transient: true },
          { code: "23505", transient: false }
        ])
      }).pipe(Effect.provide(Layer.fresh(DbLive(options, "transient-codes"))))
    }), { timeout: 60_000 })
})
