/** Runs the one migration set with @effect/sql's dialect-neutral Migrator (needs only SqlClient). */
import { Migrator } from "@effect/sql"
import { Effect, Layer } from "effect"
import { migrations } from "./migrations/index.js"

export const MIGRATIONS_TABLE = "attest_migrations"

/** Applies pending migrations; returns the ones applied now. On pg, concurrent starts serialize on a table lock. */
export const runMigrations = Migrator.make({})({
  loader: Migrator.fromRecord(migrations),
  table: MIGRATIONS_TABLE
}).pipe(Effect.withSpan("db.migrate"))

export const MigrationsLive = Layer.effectDiscard(runMigrations)
