/**
 * An agent's compiled AgentPolicy for the pull loop (src/verifier/domain/policy/storedPolicies.ts, the
 * one compiler of src/attestation/) and the PCR mask to ask for. The loop keeps the result while
 * the row's policy facts stay the same (`policyKey`), so nothing is parsed per attestation.
 */
import { Effect } from "effect"
import type { CompileSettings } from "../../attestation/compileAgentPolicy.js"
import { IMA_PCR, MEASURED_BOOT_PCRS } from "../../attestation/evaluate/tpmPolicy.js"
import type { AgentPolicy } from "../../attestation/evaluate/types.js"
import { compileStoredAgent, policyKey, type StoredPolicySources } from "../domain/policy/storedPolicies.js"
import type { AgentView } from "../domain/repo/rows.js"

export { policyKey }

export interface CompiledAgent {
  readonly key: string
  readonly policy: AgentPolicy
  /** The PCR selection sent as `mask`. */
  readonly mask: number
}

/**
 * The mask: `tpm_policy`'s own, every PCR it lists, PCR 10 with a runtime policy and the
 * measured-boot PCRs with a reference state (what Keylime's tenant ORs into the mask it stores).
 */
export const quoteMask = (declared: number | undefined, listed: Iterable<number>, runtime: boolean, mb: boolean): number => {
  let mask = declared ?? 0
  for (const p of listed) mask |= 1 << p
  if (runtime) mask |= 1 << IMA_PCR
  if (mb) for (const p of MEASURED_BOOT_PCRS) mask |= 1 << p
  return mask >>> 0
}

export const compilePullAgent = (v: AgentView, settings: CompileSettings, sources: StoredPolicySources) =>
  Effect.map(compileStoredAgent(v, settings, sources), (policy): CompiledAgent => ({
    key: policyKey(v),
    policy,
    mask: quoteMask(policy.tpmPolicy.mask, policy.tpmPolicy.pcrs.keys(), v.runtime_policy_has_policy, policy.measuredBoot !== undefined)
  }))
