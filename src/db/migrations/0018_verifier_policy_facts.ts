/**
 * Covering indexes of the policy facts an agent view joins (checksum, has_policy, count). The
 * policy text (megabytes for a runtime policy) sits before those columns in the row, so without
 * them every view read walks the text's overflow pages: about 1 ms per read of a 100,000-digest
 * policy on SQLite, paid by every quote cycle of every agent (bench/verifier-fleet.ts).
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

const migration = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE INDEX verifier_runtime_policy_facts ON verifier_runtime_policies (name, checksum, has_policy, digest_count)`
  yield* sql`CREATE INDEX verifier_mb_policy_facts ON verifier_mb_policies (name, checksum, has_policy, key_count)`
})

export default migration
