/**
 * SQLite's WAL checkpoints run on a worker thread (src/db/walCheckpointer.ts): the main connection's
 * automatic checkpoint is off once the worker runs, and the worker copies the WAL into the database;
 * a worker that cannot run turns the automatic checkpoint back on. A real database file, real threads.
 */
import { SqlClient } from "@effect/sql"
import { SqliteClient } from "@effect/sql-sqlite-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Schedule } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type CheckpointerOptions, lastCheckpoint, walCheckpointer } from "../../src/db/walCheckpointer.js"

const onFile = <A, E>(options: Partial<CheckpointerOptions>, body: (filename: string) => Effect.Effect<A, E, SqlClient.SqlClient>) =>
  Effect.acquireUseRelease(
    Effect.sync(() => mkdtempSync(join(tmpdir(), "attest-wal-"))),
    (dir) => {
      const filename = join(dir, "t.sqlite")
      const client = SqliteClient.layer({ filename })
      const checkpoints = Layer.scopedDiscard(walCheckpointer(filename, { startAfterMs: 0, everyMs: 50, ...options }))
      return body(filename).pipe(Effect.provide(Layer.provideMerge(checkpoints, client)))
    },
    (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
  )

const autocheckpoint = Effect.flatMap(SqlClient.SqlClient, (sql) => sql<{ wal_autocheckpoint: number }>`PRAGMA wal_autocheckpoint`).pipe(
  Effect.map((rows) => rows[0]!.wal_autocheckpoint)
)
/** `value` until it gives `want` (the worker runs beside the test: its effects are awaited, within 30 s). */
const eventually = <A, E, R>(value: Effect.Effect<A, E, R>, want: (a: A) => boolean) =>
  value.pipe(
    Effect.filterOrFail(want, () => "not yet"),
    Effect.retry(Schedule.spaced("50 millis").pipe(Schedule.upTo("30 seconds"))),
    Effect.catchAll(() => value)
  )

describe("SQLite WAL checkpoints on a worker thread", () => {
  it.live("the connection stops checkpointing and the worker copies the WAL into the database", () =>
    onFile({}, (filename) =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        expect(yield* eventually(autocheckpoint, (n) => n === 0)).toEqual(0)
        yield* sql`CREATE TABLE t (id INTEGER PRIMARY KEY, s TEXT)`
        // ~3,000 pages of WAL: more than the automatic checkpoint's 1,000, which is off
        for (let i = 0; i < 3000; i++) yield* sql`INSERT INTO t (id, s) VALUES (${i}, ${"x".repeat(3000)})`
        const report = yield* eventually(Effect.sync(() => lastCheckpoint(filename)), (r) => r !== undefined && r.log >= 3000 && r.checkpointed === r.log)
        expect(report).toMatchObject({ busy: false })
        expect(report!.checkpointed).toEqual(report!.log)
        expect((yield* sql<{ n: number }>`SELECT COUNT(*) AS n FROM t`)[0]!.n).toEqual(3000)
      })), 60_000)

  it.live("a worker that cannot run turns the connection's automatic checkpoint back on", () =>
    onFile({ driver: "/nonexistent/better-sqlite3.js" }, () =>
      Effect.gen(function*() {
        // the worker fails at once: the pragma goes 0 → 1000 (or stays 1000 if the failure came first)
        expect(yield* eventually(autocheckpoint, (n) => n === 1000)).toEqual(1000)
      })), 60_000)
})
