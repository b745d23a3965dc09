/**
 * The verifier's named policies. Runtime (IMA) policies keep the JSON text as stored (the verified
 * payload of a signed upload), its SHA-256 `checksum` (the policy cache key), whether it is more
 * than Keylime's empty policy (`has_policy`: generator > EmptyAllowList) and its number of digest
 * entries (API 2.0–2.4 `allowlist_len`). Measured-boot policies keep the reference state JSON or
 * NULL, and its number of top-level keys (API 2.0–2.4 `mb_refstate_len`). `seq` keeps insertion order for listings, as Keylime lists them.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

const migration = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE verifier_runtime_policies (
    name TEXT PRIMARY KEY,
    seq BIGINT NOT NULL,
    runtime_policy TEXT NOT NULL,
    tpm_policy TEXT,
    checksum TEXT NOT NULL,
    has_policy INTEGER NOT NULL,
    digest_count BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
  )`
  yield* sql`CREATE TABLE verifier_mb_policies (
    name TEXT PRIMARY KEY,
    seq BIGINT NOT NULL,
    mb_policy TEXT,
    checksum TEXT NOT NULL,
    has_policy INTEGER NOT NULL,
    key_count BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
  )`
})

export default migration
