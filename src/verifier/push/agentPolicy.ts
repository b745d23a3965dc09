/**
 * An agent's compiled AgentPolicy for push evidence, by the one compiler (src/attestation/) over
 * its stored configuration, as the pull loop's (the model turns the NK binding off: a push agent
 * has no V key to bind), and what phase 1 needs of the agent for negotiation.
 */
import { Data, Effect, Either } from "effect"
import { VerifierConfig } from "../../config/services.js"
import { severityPolicyFromOptions } from "../../attestation/evaluate/severity.js"
import { parseTpmPolicy } from "../../attestation/evaluate/tpmPolicy.js"
import type { AgentPolicy } from "../../attestation/evaluate/types.js"
import { Lru } from "../domain/policy/lru.js"
import { PolicyCache } from "../domain/policy/PolicyCache.js"
import { compileSettingsOf, compileStoredAgent, policyKey, type StoredPolicySources } from "../domain/policy/storedPolicies.js"
import { MbPolicyRepo, RuntimePolicyRepo } from "../domain/repo/PolicyRepo.js"
import type { NegotiationPolicy } from "./negotiate.js"
import type { PushAgentFacts } from "../domain/pushStore/rows.js"

/** A `[verifier]` option the push verification cannot use: stops start-up, the message names it. */
export class PushConfigError extends Data.TaggedError("PushConfigError")<{ readonly message: string }> {}

/** What phase 1 needs of the agent: no compilation. */
export const negotiationPolicyOf = (view: PushAgentFacts): NegotiationPolicy => {
  const tpm = parseTpmPolicy(view.tpm_policy)
  return {
    tpmPolicyPcrs: Either.isRight(tpm) ? [...tpm.right.pcrs.entries()].filter(([, v]) => v.size > 0).map(([p]) => p) : [],
    hasRuntimePolicy: view.runtime_policy_has_policy,
    hasMbPolicy: view.mb_policy_has_policy,
    acceptHash: view.accept_tpm_hash_algs,
    acceptSigning: view.accept_tpm_signing_algs,
    akTpm: view.ak_tpm
  }
}

/**
 * The push verdict's policies: the one compiler (src/attestation/) over the agent's stored
 * configuration, kept per agent while its policy facts stay the same (`policyKey`), so nothing is
 * parsed per attestation and the AK bytes stay the same object (the AK cache finds its key by identity).
 */
export const makeAgentPolicies = Effect.gen(function*() {
  const config = yield* VerifierConfig
  const sources: StoredPolicySources = { cache: yield* PolicyCache, runtimePolicies: yield* RuntimePolicyRepo, mbPolicies: yield* MbPolicyRepo }
  const severity = yield* Either.mapLeft(severityPolicyFromOptions(config), (e) => new PushConfigError({ message: e.message }))
  const settings = compileSettingsOf(config, severity, "push")
  // bounded (a compiled policy holds its runtime policy alive), but above the policy cache's
  // default so that a fleet of agents sharing a policy keeps its AK objects (the AK cache's key)
  const compiled = new Lru<string, { readonly key: string; readonly policy: AgentPolicy }>(Math.max(config.policy_cache_size, 1024))

  const policyOf = (view: PushAgentFacts) =>
    Effect.suspend(() => {
      const key = policyKey(view)
      const hit = compiled.get(view.agent_id)
      if (hit !== undefined && hit.key === key) return Effect.succeed(hit.policy)
      return Effect.tap(compileStoredAgent(view, settings, sources), (policy) => Effect.sync(() => compiled.set(view.agent_id, { key, policy })))
    })
  return { policyOf } as const
})
