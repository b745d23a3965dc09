/**
 * The verifier's agents (keylime-wire.md §1.4): add with every creation-body variant, show per API
 * version, list, bulk, delete, stop, reactivate. Everything a creation needs is checked before the
 * transaction that stores the agent and its policies; a refused request stores nothing. The pull
 * loop is told through `PollerControl` after the database has the change. A push agent's PoP
 * tokens are bound to its enrolment: enrolment, delete, stop and reactivate end its sessions
 * (domain/pushStore/SessionEnds.ts).
 */
import { SqlClient } from "@effect/sql"
import { Clock, Effect, Either, Option } from "effect"
import { fnTraced } from "../../ops/fnTraced.js"
import { AGENT_ID_RULE, isAgentId } from "../../../schemas/Common.js"
import type { AnyAgentStatus, VerifierAgentBulk, VerifierAgentList } from "../../../schemas/Verifier.js"
import { VerifierConfig } from "../../config/services.js"
import type { ApiVersion } from "../../http/versions.js"
import { type AgentCreation, decodeAgentCreation } from "./agentBody.js"
import {
  AgentAlreadyExists,
  AgentBeingDeleted,
  AgentNotFound,
  AgentOfOtherVerifier,
  InvalidAgentBody,
  InvalidAgentId,
  MbPolicyExists,
  MbPolicyNotFound,
  RuntimePolicyExists,
  RuntimePolicyNotFound,
  storeError
} from "./errors.js"
import { PollerControl } from "./PollerControl.js"
import { withPushStatus } from "./pushStore/pushStatus.js"
import { PushRepo } from "./pushStore/repo.js"
import { SessionEnds } from "./pushStore/SessionEnds.js"
import { type PushStatusFacts, readPushStatusFacts } from "./pushStore/statusFacts.js"
import { EMPTY_MB_POLICY, prepareMbPolicy } from "./policy/mbUpload.js"
import { emptyRuntimePolicyData, prepareRuntimePolicy, type PreparedRuntimePolicy } from "./policy/runtimeUpload.js"
import { pythonExpectingValueAt } from "../../attestation/pythonJsonErrors.js"
import { renderAgentStatus, type RenderSettings, withLoopFacts } from "./agentStatus.js"
import { AgentRepo, type NewAgent } from "./repo/AgentRepo.js"
import { removeAgentAndOwnPolicies } from "./repo/removeAgent.js"
import { forgetAgent, setAgentState } from "../../ops/metrics.js"
import { MbPolicyRepo, type MbPolicyData, RuntimePolicyRepo } from "./repo/PolicyRepo.js"
import { ACTIVE_STATES, OperationalState, REACTIVATABLE_STATES, stateName } from "../../attestation/states.js"
import { inTransaction } from "../../db/transaction.js"
import { nowSeconds } from "../../db/dialect.js"

/** What DELETE did: removed now (200), or marked TERMINATED for the owning process (202). */
export type RemoveOutcome = "deleted" | "terminating"

/** An agent id from a path: the domain refuses one that is not an agent id. */
export const checkId = (agentId: string) =>
  isAgentId(agentId)
    ? Effect.void
    : Effect.fail(new InvalidAgentId({ agentId, reason: AGENT_ID_RULE }))

export class Agents extends Effect.Service<Agents>()("attest/verifier/Agents", {
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
    const settings: RenderSettings = { verifierIp: config.ip, verifierPort: config.port, quoteInterval: config.quote_interval }

    /** The inline runtime policy checked and compiled, before any transaction (pure work). */
    const prepareInline = (agentId: string, creation: AgentCreation) => {
      const policy = creation.runtimePolicy
      if (policy._tag === "None") return Either.right<PreparedRuntimePolicy | null>(null)
      const name = creation.runtimePolicyName ?? agentId
      const prepared = prepareRuntimePolicy(
        name,
        { text: policy.text, key: policy.key, signature: policy.signature, legacy: policy.legacy },
        { requireSignatures: config.require_allow_list_signatures }
      )
      if (Either.isRight(prepared) || prepared.left.problem !== "not_json") return prepared
      const position = pythonExpectingValueAt(policy.text)
      return Either.left(
        new InvalidAgentBody({
          agentId,
          field: policy.legacy ? "allowlist" : "runtime_policy",
          problem: "not_json",
          reason: "is not JSON once base64-decoded",
          ...(position === undefined ? {} : { jsonPosition: position })
        })
      )
    }

    /** POST /agents/:id: the agent (START), its runtime and mb policies, in one transaction. */
    const add = fnTraced("Agents.add")(function*(agentId: string, body: unknown) {
      yield* checkId(agentId)
      const creation = yield* decodeAgentCreation(agentId, body, { requireMtlsCert: config.enable_agent_mtls, defaultModel: config.mode })
      const inline = yield* prepareInline(agentId, creation)
      const mbData: MbPolicyData | null = creation.mbPolicy === null
        ? null
        : yield* Either.mapLeft(
          prepareMbPolicy(creation.mbPolicyName ?? agentId, creation.mbPolicy),
          (e) => new InvalidAgentBody({ agentId, field: "mb_policy", problem: "invalid", reason: e.reason })
        )

      yield* inTransaction(sql, Effect.gen(function*() {
        // runtime policy by name: an inline one must not replace it; without one it must exist
        const runtimeName = creation.runtimePolicyName
        if (runtimeName !== null) {
          const exists = yield* runtimePolicies.exists(runtimeName)
          if (inline !== null && exists) return yield* new RuntimePolicyExists({ name: runtimeName })
          if (inline === null && !exists) return yield* new RuntimePolicyNotFound({ name: runtimeName })
        }
        if (Option.isSome(yield* agents.find(agentId))) return yield* new AgentAlreadyExists({ agentId })
        const storedRuntimeName = runtimeName ?? agentId
        if (inline !== null || runtimeName === null) {
          const data = (inline ?? emptyRuntimePolicyData()).data
          if (!(yield* runtimePolicies.insert(storedRuntimeName, data))) return yield* new RuntimePolicyExists({ name: storedRuntimeName })
        }

        const mbName = creation.mbPolicyName
        if (mbName !== null) {
          const exists = yield* mbPolicies.exists(mbName)
          if (mbData !== null && exists) return yield* new MbPolicyExists({ name: mbName })
          if (mbData === null && !exists) return yield* new MbPolicyNotFound({ name: mbName })
        }
        const storedMbName = mbName ?? agentId
        if (mbData !== null || mbName === null) {
          if (!(yield* mbPolicies.insert(storedMbName, mbData ?? EMPTY_MB_POLICY))) return yield* new MbPolicyExists({ name: storedMbName })
        }

        const row: NewAgent = {
          agent_id: agentId,
          verifier_id: config.verifier_id,
          // a push agent is at GET_QUOTE from its enrolment (Keylime's push mode): it is not polled
          operational_state: creation.model === "push" ? OperationalState.GET_QUOTE : OperationalState.START,
          v: creation.v,
          ip: creation.ip,
          port: creation.port,
          tpm_policy: creation.tpmPolicy,
          vtpm_policy: creation.vtpmPolicy,
          meta_data: creation.metaData,
          ak_tpm: creation.akTpm,
          mtls_cert: creation.mtlsCert,
          runtime_policy_name: storedRuntimeName,
          mb_policy_name: storedMbName,
          ima_sign_verification_keys: creation.imaSignVerificationKeys,
          revocation_key: creation.revocationKey,
          accept_tpm_hash_algs: creation.acceptTpmHashAlgs,
          accept_tpm_encryption_algs: creation.acceptTpmEncryptionAlgs,
          accept_tpm_signing_algs: creation.acceptTpmSigningAlgs,
          supported_version: creation.supportedVersion
        }
        if (!(yield* agents.insert(row))) return yield* new AgentAlreadyExists({ agentId })
        // a push agent is one from its enrolment: never polled, its attestations accepted
        if (creation.model === "push") yield* pushes.ensurePushAgent(agentId, yield* Clock.currentTimeMillis)
        // a token of an earlier enrolment of this id (another AK, perhaps) authenticates nothing of this one
        yield* sessionEnds.end(agentId, "enrolled")
      })).pipe(Effect.catchTag("SqlError", (e) => Effect.fail(storeError("add agent")(e))))

      yield* Effect.logInfo(
        `Agent ${agentId} added (runtime policy ${creation.runtimePolicyName ?? agentId}, mb policy ${creation.mbPolicyName ?? agentId})`
      )
      if (creation.model === "pull") yield* poller.start(agentId)
    })

    /** GET /agents/:id, rendered for the API version of the request. */
    const show = fnTraced("Agents.show")(function*(agentId: string, version: ApiVersion) {
      yield* checkId(agentId)
      const view = yield* agents.findView(agentId)
      if (Option.isNone(view)) return yield* new AgentNotFound({ agentId })
      const status = renderAgentStatus(view.value, version, settings)
      // an agent that pushes shows its push status (TIMEOUT after a missed deadline) and what its attestations said
      const push = yield* pushes.findPushAgent(agentId)
      if (Option.isNone(push)) return withLoopFacts(status, view.value, yield* nowSeconds)
      const facts = yield* readPushStatusFacts(sql, agentId)
      return withPushStatus(status, push.value, facts.get(agentId))
    })

    /** GET /agents/ (`?verifier=` filters): ids as Keylime nests them. */
    const list = fnTraced("Agents.list")(function*(verifierId?: string) {
      const ids = yield* agents.listIds(verifierId)
      const result: VerifierAgentList = { uuids: ids.map((id) => [id] as const) }
      return result
    })

    /** GET /agents/?bulk=true: every agent's status by id. */
    const bulk = fnTraced("Agents.bulk")(function*(version: ApiVersion, verifierId?: string) {
      const views = yield* agents.listViews(verifierId)
      // push agents show their push status, as GET of one agent does
      const pushed = new Map((yield* pushes.listPushAgents).map((p) => [p.agent_id, p] as const))
      const facts = pushed.size === 0 ? new Map<string, PushStatusFacts>() : yield* readPushStatusFacts(sql)
      const result: Record<string, AnyAgentStatus> = {}
      const now = yield* nowSeconds
      for (const view of views) {
        const status = renderAgentStatus(view, version, settings)
        const push = pushed.get(view.agent_id)
        result[view.agent_id] = push === undefined ? withLoopFacts(status, view, now) : withPushStatus(status, push, facts.get(view.agent_id))
      }
      return result as VerifierAgentBulk
    })

    /** Removes an agent and the policies stored under its id that no other agent uses. */
    const removeNow = (agentId: string) => removeAgentAndOwnPolicies({ sql, agents, runtimePolicies, mbPolicies }, agentId)

    /**
     * DELETE /agents/:id: removed at once unless a loop in another process polls it; then it is
     * marked TERMINATED (8) and that process deletes it (202).
     */
    const remove = fnTraced("Agents.remove")(function*(agentId: string) {
      yield* checkId(agentId)
      const row = yield* agents.find(agentId)
      if (Option.isNone(row)) return yield* new AgentNotFound({ agentId })
      const agent = row.value
      // in cluster mode every runner may delete any agent (verifier_id names it, it does not own it)
      if (!config.cluster && agent.verifier_id !== config.verifier_id) {
        return yield* new AgentOfOtherVerifier({ agentId, verifierId: agent.verifier_id })
      }
      const state = agent.operational_state
      if (state === OperationalState.TERMINATED) return "terminating" as RemoveOutcome
      const polled = pull && Option.isNone(yield* pushes.findPushAgent(agentId))
      if (polled && ACTIVE_STATES.has(state as OperationalState) && !(yield* poller.isOwned(agentId))) {
        yield* agents.adminUpdate(agentId, { operationalState: OperationalState.TERMINATED })
        yield* Effect.logInfo(`Agent ${agentId} marked TERMINATED; the verifier process polling it deletes it`)
        return "terminating" as RemoveOutcome
      }
      yield* poller.stop(agentId)
      // its tokens end first: one that outlived its agent could attest for an agent enrolled again under its id
      yield* sessionEnds.end(agentId, "deleted")
      if (!(yield* removeNow(agentId))) return yield* new AgentNotFound({ agentId })
      yield* forgetAgent(agentId)
      yield* Effect.logInfo(`Agent ${agentId} deleted (was ${stateName[state as OperationalState] ?? state})`)
      return "deleted" as RemoveOutcome
    })

    /** PUT /agents/:id/stop: TENANT_FAILED (10), the loop cancelled at once. */
    const stop = fnTraced("Agents.stop")(function*(agentId: string) {
      yield* checkId(agentId)
      const row = yield* agents.find(agentId)
      if (Option.isNone(row)) return yield* new AgentNotFound({ agentId })
      if (row.value.operational_state === OperationalState.TERMINATED) return yield* new AgentBeingDeleted({ agentId })
      const updated = yield* agents.adminUpdate(agentId, { operationalState: OperationalState.TENANT_FAILED })
      if (Option.isNone(updated)) return yield* new AgentNotFound({ agentId })
      yield* poller.stop(agentId)
      yield* sessionEnds.end(agentId, "stopped")
      yield* setAgentState(agentId, OperationalState.TENANT_FAILED)
      yield* Effect.logInfo(`Agent ${agentId} stopped (operational_state 10)`)
    })

    /**
     * PUT /agents/:id/reactivate: polling starts again from a fresh cycle (V delivered again, IMA
     * list from entry 0). attest departs from Keylime after `stop`: Keylime answers 200 and leaves
     * the agent at TENANT_FAILED (10); attest restarts polling.
     */
    const reactivate = fnTraced("Agents.reactivate")(function*(agentId: string) {
      yield* checkId(agentId)
      const row = yield* agents.find(agentId)
      if (Option.isNone(row)) return yield* new AgentNotFound({ agentId })
      const before = row.value.operational_state
      if (!REACTIVATABLE_STATES.has(before as OperationalState)) return yield* new AgentBeingDeleted({ agentId })
      const updated = yield* agents.adminUpdate(agentId, { operationalState: OperationalState.START, resetProgress: true })
      if (Option.isNone(updated)) return yield* new AgentNotFound({ agentId })
      // a push agent: attestations accepted again (status no longer TIMEOUT), failures forgotten,
      // and tokens of before the reactivation end (it authenticates again)
      yield* pushes.restoreAcceptance(agentId, yield* Clock.currentTimeMillis)
      yield* sessionEnds.end(agentId, "reactivated")
      if (before === OperationalState.TENANT_FAILED) {
        yield* Effect.logInfo(
          `Agent ${agentId} reactivated after stop: polling restarts (attest departs from Keylime, which keeps a stopped agent at 10)`
        )
      } else {
        yield* Effect.logInfo(`Agent ${agentId} reactivated (was ${stateName[before as OperationalState] ?? before})`)
      }
      const pushAgent = Option.isSome(yield* pushes.findPushAgent(agentId))
      // in cluster mode any runner starts any agent's loop (its entity's runner polls it)
      if (pull && !pushAgent && (config.cluster || row.value.verifier_id === config.verifier_id)) yield* poller.start(agentId)
    })

    return { add, show, list, bulk, remove, stop, reactivate } as const
  })
}) {}
