/**
 * Insertion order for listings (Keylime lists agents and policies in the order they were added):
 * the next `seq` of a table. Two concurrent inserts may draw the same number on PostgreSQL; the
 * listing then orders them by name, which is harmless.
 */
import type { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { storeError } from "../errors.js"

export const nextSeq = (sql: SqlClient.SqlClient, table: "verifier_agents" | "verifier_runtime_policies" | "verifier_mb_policies") =>
  sql<{ next: unknown }>`SELECT COALESCE(MAX(seq), 0) + 1 AS next FROM ${sql.literal(table)}`.pipe(
    Effect.map((rows) => Number(rows[0]?.next ?? 1)),
    Effect.mapError(storeError(`next ${table} seq`))
  )
