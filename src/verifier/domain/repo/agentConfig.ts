/**
 * The configuration writes of PATCH /v3/agents/:id (AgentAdmin.update): the columns an admin may
 * change on an enrolled agent, with `generation` bumped so a pull loop that read the old row loses
 * its next conditional write and is restarted on the new one; and a push agent's acceptance of
 * attestations. Same SQL on SQLite and PostgreSQL; the caller runs both in one transaction.
 */
import type { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { nowSeconds } from "../../../db/dialect.js"
import { storeError } from "../errors.js"
import { OperationalState } from "../../../attestation/states.js"

/** Every configuration column PATCH may write (all given: the merged, checked configuration). */
export interface AgentConfigWrite {
  readonly ip: string
  readonly port: number
  readonly tpm_policy: string
  readonly vtpm_policy: string | null
  readonly meta_data: string
  readonly ima_sign_verification_keys: string
  readonly revocation_key: string
  readonly accept_tpm_hash_algs: ReadonlyArray<string>
  readonly accept_tpm_encryption_algs: ReadonlyArray<string>
  readonly accept_tpm_signing_algs: ReadonlyArray<string>
  readonly mtls_cert: string | null
  readonly supported_version: string | null
  readonly runtime_policy_name: string
  readonly mb_policy_name: string
}

/** True when written; false for an unknown agent or one whose deletion is under way (TERMINATED). */
export const writeAgentConfig = (sql: SqlClient.SqlClient, agentId: string, w: AgentConfigWrite) =>
  Effect.flatMap(nowSeconds, (now) =>
    sql`UPDATE verifier_agents SET ${
      sql.update({
        ...w,
        accept_tpm_hash_algs: JSON.stringify(w.accept_tpm_hash_algs),
        accept_tpm_encryption_algs: JSON.stringify(w.accept_tpm_encryption_algs),
        accept_tpm_signing_algs: JSON.stringify(w.accept_tpm_signing_algs),
        updated_at: now
      })
    }, generation = generation + 1
      WHERE agent_id = ${agentId} AND operational_state <> ${OperationalState.TERMINATED} RETURNING agent_id`.pipe(
      Effect.map((rows) => rows.length > 0),
      Effect.mapError(storeError("update agent configuration"))
    ))

/**
 * A push agent's acceptance of attestations: false refuses them as a missed deadline does (status
 * TIMEOUT); true accepts them again and clears the missed deadline (failures are kept: reactivate
 * forgets them). False when the agent has no push state.
 */
export const writePushAcceptance = (sql: SqlClient.SqlClient, agentId: string, accept: boolean, atMillis: number) =>
  (accept
    ? sql`UPDATE push_agents SET accept_attestations = 1, deadline_at = NULL, updated_at = ${atMillis} WHERE agent_id = ${agentId} RETURNING agent_id`
    : sql`UPDATE push_agents SET accept_attestations = 0, updated_at = ${atMillis} WHERE agent_id = ${agentId} RETURNING agent_id`).pipe(
      Effect.map((rows) => rows.length > 0),
      Effect.mapError(storeError("update push acceptance"))
    )
