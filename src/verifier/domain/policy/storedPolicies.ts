/**
 * An enrolled agent's policy for the evaluator, for the pull loop and the push verdict alike: its
 * stored configuration facts, its runtime policy and measured-boot reference state through the
 * PolicyCache (compiled once per checksum), compiled by src/attestation/compileAgentPolicy.ts.
 * A policy the row names that is not stored, or that no longer loads, is AgentConfigUnusable
 * naming it (never an empty policy, never accept-all).
 */
import { Effect, Option } from "effect"
import { builtinMbPolicies } from "../../../boot/policy.js"
import type { VerifierOptions } from "../../../config/sections.js"
import { AgentConfigUnusable } from "../../../attestation/AgentConfigUnusable.js"
import { type AgentConfigFacts, type AgentStoredPolicies, compileAgentPolicy, type CompileSettings } from "../../../attestation/compileAgentPolicy.js"
import type { VerifierStoreError } from "../errors.js"
import type { SeverityPolicy } from "../../../attestation/evaluate/severity.js"
import type { AgentPolicy } from "../../../attestation/evaluate/types.js"
import type { MbPolicyRepo, RuntimePolicyRepo } from "../repo/PolicyRepo.js"
import type { AgentView } from "../repo/rows.js"
import type { PolicyCache } from "./PolicyCache.js"

/** What an agent's compiled policy is made of: the row's configuration and its policies' facts. */
export type StoredAgentConfig = Pick<
  AgentView,
  | "agent_id"
  | "ak_tpm"
  | "tpm_policy"
  | "ima_sign_verification_keys"
  | "accept_tpm_hash_algs"
  | "accept_tpm_encryption_algs"
  | "accept_tpm_signing_algs"
  | "runtime_policy_name"
  | "runtime_policy_checksum"
  | "mb_policy_name"
  | "mb_policy_checksum"
>

export interface StoredPolicySources {
  readonly cache: PolicyCache
  readonly runtimePolicies: RuntimePolicyRepo
  readonly mbPolicies: MbPolicyRepo
}

/** What the compiled policy depends on: when any of it changes the policy is compiled again. */
export const policyKey = (v: StoredAgentConfig): string =>
  [
    v.ak_tpm,
    v.tpm_policy,
    v.ima_sign_verification_keys,
    v.runtime_policy_checksum,
    v.mb_policy_checksum,
    v.accept_tpm_hash_algs.join(","),
    v.accept_tpm_encryption_algs.join(","),
    v.accept_tpm_signing_algs.join(",")
  ].join("|")

export const configFactsOf = (v: StoredAgentConfig): AgentConfigFacts => ({
  agentId: v.agent_id,
  akTpm: v.ak_tpm,
  tpmPolicy: v.tpm_policy,
  imaSignVerificationKeys: v.ima_sign_verification_keys,
  accept: { hash: v.accept_tpm_hash_algs, encryption: v.accept_tpm_encryption_algs, signing: v.accept_tpm_signing_algs }
})

/** The agent's runtime policy and reference state, compiled through the cache; a missing or unloadable one names its field. */
export const loadStoredPolicies = (v: StoredAgentConfig, sources: StoredPolicySources) =>
  Effect.gen(function*() {
    const unusable = (field: string, reason: string) => new AgentConfigUnusable({ agentId: v.agent_id, field, reason })
    const notStored = (field: string, name: string) => unusable(field, `names policy '${name}', which is not stored`)
    /** The stored text of the policy the row names; one not stored is named by its field. */
    const textOf = <T, S>(field: string, name: string, find: (name: string) => Effect.Effect<Option.Option<T>, VerifierStoreError>, text: (row: T) => S) =>
      Effect.flatMap(find(name), Option.match({ onNone: () => Effect.fail(notStored(field, name)), onSome: (row) => Effect.succeed(text(row)) }))
    const runtime = yield* sources.cache.runtime(
      v.runtime_policy_checksum,
      textOf("runtime_policy_name", v.runtime_policy_name, sources.runtimePolicies.find, (row) => row.runtime_policy)
    ).pipe(Effect.catchTag("StoredPolicyUnloadable", (e) => Effect.fail(unusable("runtime_policy", e.message))))
    const refstate = yield* sources.cache.mb(v.mb_policy_checksum, textOf("mb_policy_name", v.mb_policy_name, sources.mbPolicies.find, (row) => row.mb_policy))
      .pipe(Effect.catchTag("StoredPolicyUnloadable", (e) => Effect.fail(unusable("mb_policy", e.message))))
    return { runtime: runtime.compiled, refstate: refstate === null ? undefined : refstate } satisfies AgentStoredPolicies
  })

/** The enrolled agent's AgentPolicy: its stored policies loaded, then the one compiler. */
export const compileStoredAgent = (v: StoredAgentConfig, settings: CompileSettings, sources: StoredPolicySources) =>
  Effect.flatMap(loadStoredPolicies(v, sources), (stored): Effect.Effect<AgentPolicy, AgentConfigUnusable> =>
    compileAgentPolicy(configFactsOf(v), stored, settings))

/** The `[verifier]` options the compiler reads, for the pull loop or the push verdict. */
export const compileSettingsOf = (
  config: Pick<VerifierOptions, "measured_boot_policy_name" | "measured_boot_evaluate" | "ignore_tomtou_errors">,
  severity: SeverityPolicy,
  model: "pull" | "push"
): CompileSettings => ({
  model,
  severity,
  measuredBootPolicyName: config.measured_boot_policy_name,
  measuredBootPolicy: builtinMbPolicies.find((p) => p.name === config.measured_boot_policy_name),
  measuredBootEvaluate: config.measured_boot_evaluate,
  // Keylime reads ignore_tomtou_errors inverted: True reports ToMToU entries (see sections.ts)
  reportTomtou: config.ignore_tomtou_errors
})
