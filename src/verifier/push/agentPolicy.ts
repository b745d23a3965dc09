/**
 * An agent's compiled AgentPolicy for push evidence: its AK, accept lists, tpm_policy, and its
 * runtime and measured-boot policies through the PolicyCache (compiled once per checksum). The
 * NK binding is off: a push agent has no V key to bind (Keylime's push verification passes no
 * NK either); the TPM clock is compared between attestations as in the pull loop.
 */
import { Data, Effect, Either, Option } from "effect"
import { acceptAllPolicy, builtinMbPolicies } from "../../boot/policy.js"
import { VerifierConfig } from "../../config/services.js"
import { fromBase64 } from "../../tpm/bytes.js"
import { severityPolicyFromOptions } from "../evaluate/severity.js"
import { parseTpmPolicy } from "../evaluate/tpmPolicy.js"
import type { AgentPolicy, EvaluateOptions } from "../evaluate/types.js"
import { PolicyCache } from "../policy/PolicyCache.js"
import { MbPolicyRepo, RuntimePolicyRepo } from "../repo/PolicyRepo.js"
import type { NegotiationPolicy } from "./negotiate.js"
import type { PushAgentFacts } from "./rows.js"

/** An agent's stored policy that cannot be used (the background verification records it as a failure). */
export class AgentPolicyUnusable extends Data.TaggedError("AgentPolicyUnusable")<{ readonly message: string }> {}

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

export const makeAgentPolicies = Effect.gen(function*() {
  const config = yield* VerifierConfig
  const cache = yield* PolicyCache
  const runtimeRepo = yield* RuntimePolicyRepo
  const mbRepo = yield* MbPolicyRepo
  const severity = yield* Either.mapLeft(severityPolicyFromOptions(config), (e) => new PushConfigError({ message: e.message }))
  const mbPolicy = builtinMbPolicies.find((p) => p.name === config.measured_boot_policy_name) ?? acceptAllPolicy
  const options: EvaluateOptions = {
    severity,
    measuredBootEvaluate: config.measured_boot_evaluate,
    reportTomtou: config.ignore_tomtou_errors,
    bindNk: false,
    checkClock: true
  }
  // the same AK bytes object per agent and AK text, so the AK cache finds its key by identity
  const akBytes = new Map<string, { readonly text: string; readonly bytes: Uint8Array }>()

  const policyOf = (view: PushAgentFacts) =>
    Effect.gen(function*() {
      const tpm = parseTpmPolicy(view.tpm_policy)
      if (Either.isLeft(tpm)) return yield* new AgentPolicyUnusable({ message: `tpm_policy ${tpm.left.field} ${tpm.left.reason}` })
      let ak = akBytes.get(view.agent_id)
      if (ak === undefined || ak.text !== view.ak_tpm) {
        const bytes = fromBase64(view.ak_tpm)
        if (bytes === undefined) return yield* new AgentPolicyUnusable({ message: "ak_tpm is not base64" })
        ak = { text: view.ak_tpm, bytes }
        akBytes.set(view.agent_id, ak)
      }
      const runtime = view.runtime_policy_has_policy
        ? yield* cache.runtime(
          view.runtime_policy_checksum,
          runtimeRepo.find(view.runtime_policy_name).pipe(Effect.map(Option.match({ onNone: () => "", onSome: (r) => r.runtime_policy })))
        )
        : undefined
      const refstate = view.mb_policy_has_policy
        ? yield* cache.mb(view.mb_policy_checksum, mbRepo.find(view.mb_policy_name).pipe(Effect.map(Option.match({ onNone: () => null, onSome: (r) => r.mb_policy }))))
        : null
      const policy: AgentPolicy = {
        ak: ak.bytes,
        accept: { hash: view.accept_tpm_hash_algs, encryption: view.accept_tpm_encryption_algs, signing: view.accept_tpm_signing_algs },
        tpmPolicy: tpm.right,
        runtimePolicy: runtime?.compiled,
        measuredBoot: refstate === null ? undefined : { policy: mbPolicy, refstate },
        options
      }
      return policy
    })
  return { policyOf } as const
})
