/**
 * The verifier's agents: what the tenant gave at creation, and the loop's state. All loop state
 * lives here (a loop can move to another process): progress of the evaluator (`evaluation_state`,
 * JSON), V delivery, retries, the next poll. `generation` is bumped by every admin change (stop,
 * reactivate, delete); the loop writes only `WHERE generation = <the one it read>`, so an admin
 * change made during a cycle wins. Policies are referenced by name (foreign keys: a policy in use
 * cannot be deleted). Timestamps are epoch seconds.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

const migration = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE verifier_agents (
    agent_id TEXT PRIMARY KEY,
    seq BIGINT NOT NULL,
    verifier_id TEXT NOT NULL,
    operational_state INTEGER NOT NULL,
    v TEXT,
    ip TEXT NOT NULL,
    port INTEGER NOT NULL,
    tpm_policy TEXT NOT NULL,
    vtpm_policy TEXT,
    meta_data TEXT NOT NULL,
    ak_tpm TEXT NOT NULL,
    mtls_cert TEXT,
    runtime_policy_name TEXT NOT NULL REFERENCES verifier_runtime_policies (name),
    mb_policy_name TEXT NOT NULL REFERENCES verifier_mb_policies (name),
    ima_sign_verification_keys TEXT NOT NULL,
    revocation_key TEXT NOT NULL,
    accept_tpm_hash_algs TEXT NOT NULL,
    accept_tpm_encryption_algs TEXT NOT NULL,
    accept_tpm_signing_algs TEXT NOT NULL,
    supported_version TEXT,
    hash_alg TEXT NOT NULL,
    enc_alg TEXT NOT NULL,
    sign_alg TEXT NOT NULL,
    severity_level INTEGER,
    last_event_id TEXT,
    attestation_count BIGINT NOT NULL,
    last_received_quote BIGINT NOT NULL,
    last_successful_attestation BIGINT NOT NULL,
    evaluation_state TEXT,
    v_delivered INTEGER NOT NULL,
    retry_count INTEGER NOT NULL,
    next_poll_at BIGINT,
    generation BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
  )`
  yield* sql`CREATE INDEX verifier_agents_by_verifier ON verifier_agents (verifier_id, operational_state)`
  yield* sql`CREATE INDEX verifier_agents_by_runtime_policy ON verifier_agents (runtime_policy_name)`
  yield* sql`CREATE INDEX verifier_agents_by_mb_policy ON verifier_agents (mb_policy_name)`
})

export default migration
