/**
 * Throwaway databases for repository tests on both backends.
 *   const options = yield* testDatabase("pg")        // scoped: a fresh schema, dropped afterwards
 *   yield* effect.pipe(Effect.provide(DbLive(options, "registrar")))
 * The same options can be opened again to test restarts. Suites for "pg" must guard with
 * `describe.skipIf(!(await needsPostgres()))`.
 */
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Effect, Redacted } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { DatabaseOptions } from "../../src/db/Sql.js"
import { postgresUrl } from "./requirements.js"

export type TestBackend = "sqlite" | "pg"

/** `url` with `search_path` set to `schema` for every connection of the pool. */
export const withSearchPath = (url: string, schema: string): string => {
  const u = new URL(url)
  u.searchParams.set("options", `-c search_path=${schema}`)
  return u.toString()
}

const adminStatement = (statement: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(statement)).pipe(
    Effect.provide(PgClient.layer({ url: Redacted.make(postgresUrl), maxConnections: 1 })),
    Effect.orDie
  )

const pgSchema = Effect.acquireRelease(
  Effect.sync(() => `t_${Math.random().toString(36).slice(2, 10)}`).pipe(
    Effect.tap((schema) => adminStatement(`CREATE SCHEMA ${schema}`))
  ),
  (schema) => adminStatement(`DROP SCHEMA ${schema} CASCADE`)
)

/** The same PostgreSQL schema as `db`, reached through a relay listening on `port` of 127.0.0.1. */
export const throughRelay = (db: DatabaseOptions, port: number): DatabaseOptions => {
  const schema = new URL(db.database_url).searchParams.get("options")!.replace("-c search_path=", "")
  const via = new URL(postgresUrl)
  via.port = String(port)
  return { ...db, database_url: withSearchPath(via.toString(), schema) }
}

/** Options for a fresh, empty database of the given backend, removed when the scope closes. */
export const testDatabase = (backend: TestBackend) =>
  backend === "pg"
    ? Effect.map(pgSchema, (schema): DatabaseOptions => ({ database_url: withSearchPath(postgresUrl, schema), data_dir: "" }))
    : Effect.acquireRelease(
      Effect.sync((): DatabaseOptions => ({ database_url: "", data_dir: mkdtempSync(join(tmpdir(), "attest-db-")) })),
      (o) => Effect.sync(() => rmSync(o.data_dir, { recursive: true, force: true }))
    )
