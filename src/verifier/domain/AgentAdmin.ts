/**
 * What API 3.0's agent administration adds to the v2 domain (Agents.ts keeps add, delete, stop,
 * reactivate): an agent's full record (its row with policy facts and its push state) for the
 * resource documents, and PATCH, the configuration change v2 has no route for. PATCH merges the
 * given attributes over the stored configuration and runs the creation check
 * (`decodeAgentCreation`) on the result, so a changed field is judged exactly as at enrolment; a
 * refused change stores nothing. A pull loop is restarted on the new row. A change of a push
 * agent's `accept_attestations` ends its PoP sessions (domain/pushStore/SessionEnds.ts), as reactivation does.
 */
import { SqlClient } from "@effect/sql"
import { Clock, Effect, Option, Redacted } from "effect"
import { VerifierConfig } from "../../config/services.js"
import { decodeAgentCreation } from "./agentBody.js"
import { AgentBeingDeleted, AgentNotFound, InvalidAgentBody, MbPolicyNotFound, RuntimePolicyNotFound, storeError } from "./errors.js"
import { checkId } from "./Agents.js"
import { PollerControl } from "./PollerControl.js"
import { PushRepo } from "./pushStore/repo.js"
import { SessionEnds } from "./pushStore/SessionEnds.js"
import type { AttestationRow, PushAgentRow } from "./pushStore/rows.js"
import { writeAgentConfig, writePushAcceptance } from "./repo/agentConfig.js"
import { AgentRepo } from "./repo/AgentRepo.js"
import { MbPolicyRepo, RuntimePolicyRepo } from "./repo/PolicyRepo.js"
import type { AgentRow, AgentView } from "./repo/rows.js"
import { ACTIVE_STATES, OperationalState } from "../../attestation/states.js"
import { inTransaction } from "../../db/transaction.js"

/** An agent as the v3 resource shows it. */
export interface AgentRecord {
  readonly view: AgentView
  readonly push: PushAgentRow | undefined
  /** The push agent's latest attestation, if any. */
  readonly latest: AttestationRow | undefined
}

/** Attributes PATCH may change; each is checked as the creation body's field of the same name. */
export const PATCHABLE_FIELDS: ReadonlySet<string> = new Set([
  "cloudagent_ip",
  "cloudagent_port",
  "tpm_policy",
  "vtpm_policy",
  "metadata",
  "ima_sign_verification_keys",
  "revocation_key",
  "accept_tpm_hash_algs",
  "accept_tpm_encryption_algs",
  "accept_tpm_signing_algs",
  "mtls_cert",
  "supported_version",
  "runtime_policy_name",
  "mb_policy_name",
  "accept_attestations"
])

/** Creation fields PATCH refuses, with why. */
const FIXED_FIELDS: Readonly<Record<string, string>> = {
  ak_tpm: "cannot be changed: the AK is the agent's identity (delete the agent and enrol it again)",
  v: "cannot be changed: V is delivered once per enrolment (delete the agent and enrol it again)",
  runtime_policy: "cannot be given here: store the policy under /v3/policies/ima and name it in runtime_policy_name",
  runtime_policy_key: "cannot be given here: store the policy under /v3/policies/ima and name it in runtime_policy_name",
  runtime_policy_sig: "cannot be given here: store the policy under /v3/policies/ima and name it in runtime_policy_name",
  allowlist: "cannot be given here: store the policy under /v3/policies/ima and name it in runtime_policy_name",
  mb_policy: "cannot be given here: store the reference state under /v3/refstates/uefi and name it in mb_policy_name",
  mb_refstate: "cannot be given here: store the reference state under /v3/refstates/uefi and name it in mb_policy_name"
}

/** The stored configuration as a v2 creation body (policies by name, none inline). */
const creationBodyOf = (row: AgentRow): Record<string, unknown> => ({
  tpm_policy: row.tpm_policy,
  vtpm_policy: row.vtpm_policy,
  metadata: row.meta_data,
  ima_sign_verification_keys: row.ima_sign_verification_keys,
  revocation_key: Redacted.value(row.revocation_key),
  accept_tpm_hash_algs: row.accept_tpm_hash_algs,
  accept_tpm_encryption_algs: row.accept_tpm_encryption_algs,
  accept_tpm_signing_algs: row.accept_tpm_signing_algs,
  ak_tpm: row.ak_tpm,
  cloudagent_ip: row.ip,
  cloudagent_port: row.port,
  mtls_cert: row.mtls_cert,
  supported_version: row.supported_version,
  v: row.v,
  runtime_policy: "",
  runtime_policy_name: row.runtime_policy_name,
  mb_policy_name: row.mb_policy_name,
  mb_policy: null
})

export class AgentAdmin extends Effect.Service<AgentAdmin>()("attest/verifier/AgentAdmin", {
  dependencies: [AgentRepo.Default, RuntimePolicyRepo.Default, MbPolicyRepo.Default, PushRepo.Default, SessionEnds.Default],
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const agents = yield* AgentRepo
    const runtimePolicies = yield* RuntimePolicyRepo
    const mbPolicies = yield* MbPolicyRepo
    const pushes = yield* PushRepo
    const sessionEnds = yield* SessionEnds
    const poller = yield* PollerControl
    const config = yield* VerifierConfig
    const pull = config.mode === "pull"

    const withPush = (view: AgentView) =>
      Effect.gen(function*() {
        const push = Option.getOrUndefined(yield* pushes.findPushAgent(view.agent_id))
        const latest = push === undefined ? undefined : Option.getOrUndefined(yield* pushes.latestAttestation(view.agent_id))
        return { view, push, latest } satisfies AgentRecord
      })

    /** One agent with its push state. */
    const record = Effect.fn("AgentAdmin.record")(function*(agentId: string) {
      yield* checkId(agentId)
      const view = yield* agents.findView(agentId)
      if (Option.isNone(view)) return yield* new AgentNotFound({ agentId })
      return yield* withPush(view.value)
    })

    /** Every agent of every verifier sharing the database, in creation order. */
    const records = Effect.fn("AgentAdmin.records")(function*() {
      return yield* Effect.forEach(yield* agents.listViews(), withPush)
    })

    /** PATCH: the given attributes over the stored configuration, checked as a creation body. */
    const update = Effect.fn("AgentAdmin.update")(function*(agentId: string, attributes: Readonly<Record<string, unknown>>) {
      yield* checkId(agentId)
      const refuse = (field: string, reason: string) => new InvalidAgentBody({ agentId, field, problem: "invalid", reason })
      for (const field of Object.keys(attributes)) {
        const fixed = FIXED_FIELDS[field]
        if (fixed !== undefined) return yield* refuse(field, fixed)
        if (!PATCHABLE_FIELDS.has(field)) return yield* refuse(field, `is not an agent attribute PATCH can change (it can: ${[...PATCHABLE_FIELDS].join(", ")})`)
      }
      for (const field of ["runtime_policy_name", "mb_policy_name"]) {
        const v = attributes[field]
        if (field in attributes && (typeof v !== "string" || v === "")) return yield* refuse(field, "must name a stored policy")
      }
      const accept = attributes["accept_attestations"]
      if (accept !== undefined && typeof accept !== "boolean") return yield* refuse("accept_attestations", "must be true or false")

      const row = yield* agents.find(agentId)
      if (Option.isNone(row)) return yield* new AgentNotFound({ agentId })
      // nothing to change: no write, the loop left alone
      if (Object.keys(attributes).length === 0) return yield* record(agentId)
      const before = row.value
      if (before.operational_state === OperationalState.TERMINATED) return yield* new AgentBeingDeleted({ agentId })
      const { accept_attestations: _, ...changes } = attributes
      const push = yield* pushes.findPushAgent(agentId)
      const checked = yield* decodeAgentCreation(agentId, { ...creationBodyOf(before), ...changes }, {
        requireMtlsCert: config.enable_agent_mtls,
        defaultModel: Option.isSome(push) ? "push" : "pull"
      })
      if (accept !== undefined && Option.isNone(push)) {
        return yield* refuse("accept_attestations", "applies to push agents only (this agent has not attested by push)")
      }
      // decodeAgentCreation keeps the names: both are set (stored names, or the checked new ones)
      const runtimeName = checked.runtimePolicyName ?? before.runtime_policy_name
      const mbName = checked.mbPolicyName ?? before.mb_policy_name
      const now = yield* Clock.currentTimeMillis

      yield* inTransaction(sql, Effect.gen(function*() {
        if (runtimeName !== before.runtime_policy_name && !(yield* runtimePolicies.exists(runtimeName))) {
          return yield* new RuntimePolicyNotFound({ name: runtimeName })
        }
        if (mbName !== before.mb_policy_name && !(yield* mbPolicies.exists(mbName))) return yield* new MbPolicyNotFound({ name: mbName })
        const written = yield* writeAgentConfig(sql, agentId, {
          ip: checked.ip,
          port: checked.port,
          tpm_policy: checked.tpmPolicy,
          vtpm_policy: checked.vtpmPolicy,
          meta_data: checked.metaData,
          ima_sign_verification_keys: checked.imaSignVerificationKeys,
          revocation_key: checked.revocationKey,
          accept_tpm_hash_algs: checked.acceptTpmHashAlgs,
          accept_tpm_encryption_algs: checked.acceptTpmEncryptionAlgs,
          accept_tpm_signing_algs: checked.acceptTpmSigningAlgs,
          mtls_cert: checked.mtlsCert,
          supported_version: checked.supportedVersion,
          runtime_policy_name: runtimeName,
          mb_policy_name: mbName
        })
        if (!written) return yield* new AgentNotFound({ agentId })
        if (accept !== undefined) yield* writePushAcceptance(sql, agentId, accept, now)
      })).pipe(Effect.catchTag("SqlError", (e) => Effect.fail(storeError("update agent configuration")(e))))
      if (accept !== undefined) yield* sessionEnds.end(agentId, "reconfigured")

      yield* Effect.logInfo(`Agent ${agentId} configuration changed (${Object.keys(attributes).join(", ") || "nothing"})`)
      // a loop polling it reads the new row from a fresh cycle
      if (pull && Option.isNone(push) && before.verifier_id === config.verifier_id && ACTIVE_STATES.has(before.operational_state as OperationalState)) {
        yield* poller.start(agentId)
      }
      return yield* record(agentId)
    })

    return { record, records, update } as const
  })
}) {}

