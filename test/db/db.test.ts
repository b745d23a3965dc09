import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Redacted, Schema } from "effect"
import { chooseBackend, DatabaseConfigError, DbLive } from "../../src/db/Sql.js"
import { columnTypes, DbBase64, DbBoolean, DbBytes, DbInteger, EpochSeconds, upsert } from "../../src/db/dialect.js"
import { MIGRATIONS_TABLE, runMigrations } from "../../src/db/migrate.js"
import { migrations } from "../../src/db/migrations/index.js"
import { testDatabase, type TestBackend } from "../support/db.js"
import { needsPostgres } from "../support/requirements.js"

const pgOk = await needsPostgres()

const Row = Schema.Struct({
  id: Schema.String,
  flag: DbBoolean,
  blob: DbBytes,
  b64: DbBase64,
  seen_at: EpochSeconds,
  hits: DbInteger
})

const createExample = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const t = columnTypes(sql)
  yield* sql`CREATE TABLE IF NOT EXISTS example (
    id TEXT PRIMARY KEY, flag ${t.boolean} NOT NULL, blob ${t.bytes} NOT NULL, b64 TEXT NOT NULL,
    seen_at ${t.bigint} NOT NULL, hits ${t.bigint} NOT NULL)`
})

const readExample = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql`SELECT id, flag, blob, b64, seen_at, hits FROM example ORDER BY id`
  return yield* Schema.decodeUnknown(Schema.Array(Row))(rows)
})

const backends: ReadonlyArray<[TestBackend, boolean]> = [["sqlite", true], ["pg", pgOk]]

for (const [backend, available] of backends) {
  describe.skipIf(!available)(`database on ${backend}`, () => {
    it.scoped("applies every migration once and records them", () =>
      Effect.gen(function*() {
        const o = yield* testDatabase(backend)
        const applied = yield* Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          const rows = yield* sql`SELECT migration_id, name FROM ${sql(MIGRATIONS_TABLE)} ORDER BY migration_id`
          const again = yield* runMigrations
          return { rows, again }
        }).pipe(Effect.provide(DbLive(o, "test")))
        const expected = Object.keys(migrations).map((k) => [Number(k.slice(0, 4)), k.slice(5)])
        expect(applied.rows.map((r) => [Number(r["migration_id"]), r["name"]])).toEqual(expected)
        expect(applied.again).toEqual([])
      }))

    it.scoped("upserts, and reads booleans, bytes, base64 and epoch seconds past 2038 the same way", () =>
      Effect.gen(function*() {
        const o = yield* testDatabase(backend)
        const rows = yield* Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          yield* createExample
          const base = { id: "a", flag: 1, blob: Buffer.from([0, 1, 255]), b64: "AAH/", seen_at: 4_102_444_800, hits: 1 }
          yield* upsert(sql, "example", base, ["id"])
          yield* upsert(sql, "example", { ...base, flag: 0, hits: 2 }, ["id"])
          yield* upsert(sql, "example", { ...base, id: "b", hits: 2 ** 40 }, ["id"])
          yield* upsert(sql, "example", { ...base, id: "b", hits: 7 }, ["id"], []) // DO NOTHING
          return yield* readExample
        }).pipe(Effect.provide(DbLive(o, "test")))
        expect(rows).toEqual([
          { id: "a", flag: false, blob: new Uint8Array([0, 1, 255]), b64: new Uint8Array([0, 1, 255]), seen_at: 4_102_444_800, hits: 2 },
          { id: "b", flag: true, blob: new Uint8Array([0, 1, 255]), b64: new Uint8Array([0, 1, 255]), seen_at: 4_102_444_800, hits: 2 ** 40 }
        ])
      }))

    it.scoped("rolls a failed transaction back", () =>
      Effect.gen(function*() {
        const o = yield* testDatabase(backend)
        const count = yield* Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          yield* sql`INSERT INTO attest_meta (meta_key, meta_value, updated_at) VALUES ('kept', 'x', 1)`
          const failed = yield* sql.withTransaction(Effect.gen(function*() {
            yield* sql`INSERT INTO attest_meta (meta_key, meta_value, updated_at) VALUES ('lost', 'y', 2)`
            return yield* Effect.fail("boom" as const)
          })).pipe(Effect.flip)
          expect(failed).toBe("boom")
          return yield* sql`SELECT meta_key FROM attest_meta ORDER BY meta_key`
        }).pipe(Effect.provide(DbLive(o, "test")))
        expect(count).toEqual([{ meta_key: "kept" }])
      }))

    it.scoped("keeps data across a restart and does not re-run migrations", () =>
      Effect.gen(function*() {
        const o = yield* testDatabase(backend)
        yield* Effect.flatMap(SqlClient.SqlClient, (sql) =>
          sql`INSERT INTO attest_meta (meta_key, meta_value, updated_at) VALUES ('created_by', 'test', 1)`
        ).pipe(Effect.provide(DbLive(o, "test")))
        const after = yield* Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          return { rows: yield* sql`SELECT meta_value FROM attest_meta`, again: yield* runMigrations }
        }).pipe(Effect.provide(DbLive(o, "test")))
        expect(after.rows).toEqual([{ meta_value: "test" }])
        expect(after.again).toEqual([])
      }))

    if (backend === "sqlite") {
      it.scoped("opens the SQLite file under data_dir in WAL mode", () =>
        Effect.gen(function*() {
          const o = yield* testDatabase("sqlite")
          const mode = yield* Effect.flatMap(SqlClient.SqlClient, (sql) => sql`PRAGMA journal_mode`).pipe(Effect.provide(DbLive(o, "registrar")))
          expect(mode).toEqual([{ journal_mode: "wal" }])
          const { existsSync } = yield* Effect.promise(() => import("node:fs"))
          expect(existsSync(`${o.data_dir}/registrar.sqlite`)).toBe(true)
        }))
    }
  })
}

describe("backend choice", () => {
  it("is SQLite under data_dir for an empty database_url, PostgreSQL for postgres:// URLs", () => {
    expect(chooseBackend({ database_url: "", data_dir: "/d" }, "verifier")).toEqual({ _tag: "sqlite", filename: "/d/verifier.sqlite" })
    expect(chooseBackend({ database_url: "sqlite::memory:", data_dir: "/d" }, "x")).toEqual({ _tag: "sqlite", filename: ":memory:" })
    const pg = chooseBackend({ database_url: "postgresql://u:secret@db/attest", data_dir: "/d" }, "x")
    expect(pg._tag === "pg" && Redacted.value(pg.url)).toBe("postgresql://u:secret@db/attest")
  })
  it("rejects other URLs without printing the password", () => {
    const e = chooseBackend({ database_url: "mysql://u:secret@db/attest", data_dir: "/d" }, "x")
    expect(e).toBeInstanceOf(DatabaseConfigError)
    expect((e as DatabaseConfigError).message).toContain("mysql://u:***@db/attest")
    expect((e as DatabaseConfigError).message).not.toContain("secret")
  })
})
