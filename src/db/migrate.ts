/** Runs the one migration set with @effect/sql's dialect-neutral Migrator (needs only SqlClient). */
import { Migrator } from "@effect/sql"
import { Effect, Layer } from "effect"
import { migrations } from "./migrations/index.js"
import { oneAtATime } from "./startLock.js"

export const MIGRATIONS_TABLE = "attest_migrations"

/** Applies pending migrations; returns the ones applied now. On pg, concurrent starts serialize on an advisory lock (startLock.ts). */
export const runMigrations = oneAtATime(MIGRATIONS_TABLE, Migrator.make({})({ loader: Migrator.fromRecord(migrations), table: MIGRATIONS_TABLE })).pipe(
  Effect.withSpan("db.migrate")
)

export const MigrationsLive = Layer.effectDiscard(runMigrations)
