/**
 * What differs between SQLite and PostgreSQL, in one place: DDL column types, upserts, and the
 * Schemas that read values the two drivers return differently (pg gives BIGINT as a string and
 * BYTEA as a Buffer; SQLite has no boolean type).
 */
import type { SqlClient } from "@effect/sql"
import { Clock, Effect, ParseResult, Schema } from "effect"

/** DDL fragments for the column types that are spelled differently. */
export const columnTypes = (sql: SqlClient.SqlClient) => ({
  bytes: sql.onDialectOrElse({ pg: () => sql.literal("BYTEA"), orElse: () => sql.literal("BLOB") }),
  json: sql.onDialectOrElse({ pg: () => sql.literal("JSONB"), orElse: () => sql.literal("TEXT") }),
  autoId: sql.onDialectOrElse({
    pg: () => sql.literal("BIGSERIAL PRIMARY KEY"),
    orElse: () => sql.literal("INTEGER PRIMARY KEY AUTOINCREMENT")
  }),
  /** Epoch seconds and counters that may pass 2^31. */
  bigint: sql.literal("BIGINT"),
  /** Booleans are INTEGER 0/1 on both (read with `DbBoolean`). */
  boolean: sql.literal("INTEGER")
})

const IDENT = /^[a-z_][a-z0-9_]*$/

/**
 * `INSERT … ON CONFLICT (keys) DO UPDATE SET col = excluded.col` (SQLite ≥ 3.24 and pg alike).
 * Column names come from code, never from input; they are checked anyway.
 */
export const upsert = <Row extends Record<string, unknown>>(
  sql: SqlClient.SqlClient,
  table: string,
  row: Row,
  keys: ReadonlyArray<keyof Row & string>,
  update: ReadonlyArray<keyof Row & string> = Object.keys(row).filter((c) => !keys.includes(c))
) => {
  for (const id of [table, ...keys, ...update]) if (!IDENT.test(id)) return Effect.dieMessage(`bad SQL identifier ${id}`)
  const set = update.length === 0 ? "NOTHING" : `UPDATE SET ${update.map((c) => `${c} = excluded.${c}`).join(", ")}`
  return sql`INSERT INTO ${sql.literal(table)} ${sql.insert(row)} ON CONFLICT (${sql.literal(keys.join(", "))}) DO ${sql.literal(set)}`
}

/** INTEGER / BIGINT read back: pg returns BIGINT as a decimal string. */
export const DbInteger = Schema.transformOrFail(Schema.Union(Schema.Number, Schema.String, Schema.BigIntFromSelf), Schema.Number, {
  strict: true,
  decode: (v, _, ast) => {
    const n = typeof v === "number" ? v : Number(v)
    return Number.isSafeInteger(n) ? ParseResult.succeed(n) : ParseResult.fail(new ParseResult.Type(ast, v, `not an integer: ${String(v)}`))
  },
  encode: (n) => ParseResult.succeed(n)
})

/** Booleans stored as 0/1 (pg may also hand back true/false if a column is BOOLEAN). */
export const DbBoolean = Schema.transformOrFail(Schema.Union(Schema.Number, Schema.String, Schema.Boolean), Schema.Boolean, {
  strict: true,
  decode: (v, _, ast) =>
    v === 1 || v === true || v === "1"
      ? ParseResult.succeed(true)
      : v === 0 || v === false || v === "0"
      ? ParseResult.succeed(false)
      : ParseResult.fail(new ParseResult.Type(ast, v, `not a boolean 0/1: ${String(v)}`)),
  encode: (b) => ParseResult.succeed(b ? 1 : 0)
})

/** Bytes in a BLOB/BYTEA column (both drivers return a Buffer). */
export const DbBytes = Schema.transform(Schema.Uint8ArrayFromSelf, Schema.Uint8ArrayFromSelf, {
  strict: true,
  decode: (b) => new Uint8Array(b),
  encode: (b) => Buffer.from(b)
})

/** Bytes as base64 TEXT (portable, and readable in a database shell). */
export const DbBase64 = Schema.Uint8ArrayFromBase64

/** Timestamps as integer epoch seconds in a BIGINT column. */
export const EpochSeconds = DbInteger

export const nowSeconds: Effect.Effect<number> = Effect.map(Clock.currentTimeMillis, (ms) => Math.floor(ms / 1000))
