/**
 * `verifier_agents a` joined to its two policies' facts (`r`, `m`): checksum, has_policy, counts,
 * never the text. On SQLite the covering indexes of migration 0018 answer it; SQLite would
 * otherwise pick the primary key and walk the policy text's overflow pages (megabytes) to reach
 * the facts. PostgreSQL keeps large text out of line (TOAST) and plans it well unaided.
 * AgentRepo's views and the push model's attestation context both read agents this way.
 */
import type { SqlClient } from "@effect/sql"

export const agentsWithPolicyFacts = (sql: SqlClient.SqlClient) =>
  sql.onDialectOrElse({
    sqlite: () =>
      sql.literal(
        "verifier_agents a JOIN verifier_runtime_policies r INDEXED BY verifier_runtime_policy_facts ON r.name = a.runtime_policy_name " +
          "JOIN verifier_mb_policies m INDEXED BY verifier_mb_policy_facts ON m.name = a.mb_policy_name"
      ),
    orElse: () =>
      sql.literal(
        "verifier_agents a JOIN verifier_runtime_policies r ON r.name = a.runtime_policy_name JOIN verifier_mb_policies m ON m.name = a.mb_policy_name"
      )
  })
