/**
 * An agent's compiled AgentPolicy for the pull loop, from its row: the AK bytes, accept lists,
 * parsed `tpm_policy`, IMA keyring, the runtime policy and measured-boot reference state from the
 * PolicyCache (compiled once per checksum), and the PCR mask to ask for. The loop keeps the result
 * while the row's policy facts stay the same (`policyKey`), so nothing is parsed per attestation.
 */
import { Data, Effect, Either, Option } from "effect"
import { builtinMbPolicies, type MbPolicy } from "../../boot/policy.js"
import { keyringFromJson } from "../../ima/signatures.js"
import { fromBase64 } from "../../tpm/bytes.js"
import type { SeverityPolicy } from "../evaluate/severity.js"
import { IMA_PCR, MEASURED_BOOT_PCRS, parseTpmPolicy } from "../evaluate/tpmPolicy.js"
import type { AgentPolicy, EvaluateOptions } from "../evaluate/types.js"
import type { PolicyCache } from "../policy/PolicyCache.js"
import type { MbPolicyRepo, RuntimePolicyRepo } from "../repo/PolicyRepo.js"
import type { AgentView } from "../repo/rows.js"

/** The agent's stored policy cannot be used (a row stored by a laxer version, a policy gone). */
export class AgentPolicyUnusable extends Data.TaggedError("AgentPolicyUnusable")<{
  readonly agentId: string
  readonly field: string
  readonly reason: string
}> {
  override get message(): string {
    return `agent ${this.agentId}: ${this.field} ${this.reason}`
  }
}

export interface LoopSettings {
  readonly severity: SeverityPolicy
  readonly measuredBootPolicyName: string
  readonly measuredBootEvaluate: "once" | "always"
  readonly reportTomtou: boolean
}

export interface CompiledAgent {
  readonly key: string
  readonly policy: AgentPolicy
  /** The PCR selection sent as `mask`. */
  readonly mask: number
}

/** What the compiled policy depends on: when any of it changes the loop compiles again. */
export const policyKey = (v: AgentView): string =>
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

export const compileAgentPolicy = (
  v: AgentView,
  settings: LoopSettings,
  deps: { readonly cache: PolicyCache; readonly runtimePolicies: RuntimePolicyRepo; readonly mbPolicies: MbPolicyRepo }
) =>
  Effect.gen(function*() {
    const unusable = (field: string, reason: string) => new AgentPolicyUnusable({ agentId: v.agent_id, field, reason })
    const ak = fromBase64(v.ak_tpm)
    if (ak === undefined) return yield* unusable("ak_tpm", "is not base64")
    const tpm = parseTpmPolicy(v.tpm_policy)
    if (Either.isLeft(tpm)) return yield* unusable("tpm_policy", `${tpm.left.field} ${tpm.left.reason}`)
    const keyring = keyringFromJson(v.ima_sign_verification_keys)
    if (Either.isLeft(keyring)) return yield* unusable("ima_sign_verification_keys", keyring.left)

    const runtime = yield* deps.cache.runtime(
      v.runtime_policy_checksum,
      deps.runtimePolicies.find(v.runtime_policy_name).pipe(
        Effect.flatMap(Option.match({
          onNone: () => Effect.fail(unusable("runtime_policy_name", `names policy '${v.runtime_policy_name}', which is not stored`)),
          onSome: (row) => Effect.succeed(row.runtime_policy)
        }))
      )
    ).pipe(Effect.catchTag("StoredPolicyUnloadable", (e) => Effect.fail(unusable("runtime_policy", e.message))))
    const refstate = yield* deps.cache.mb(
      v.mb_policy_checksum,
      deps.mbPolicies.find(v.mb_policy_name).pipe(Effect.map(Option.match({ onNone: () => null, onSome: (row) => row.mb_policy })))
    ).pipe(Effect.catchTag("StoredPolicyUnloadable", (e) => Effect.fail(unusable("mb_policy", e.message))))
    const mbPolicy: MbPolicy | undefined = builtinMbPolicies.find((p) => p.name === settings.measuredBootPolicyName)
    if (refstate !== null && mbPolicy === undefined) {
      return yield* unusable("measured_boot_policy_name", `'${settings.measuredBootPolicyName}' is not a measured-boot policy`)
    }

    const options: EvaluateOptions = {
      severity: settings.severity,
      measuredBootEvaluate: settings.measuredBootEvaluate,
      reportTomtou: settings.reportTomtou,
      bindNk: true,
      checkClock: true
    }
    const policy: AgentPolicy = {
      ak,
      accept: { hash: v.accept_tpm_hash_algs, encryption: v.accept_tpm_encryption_algs, signing: v.accept_tpm_signing_algs },
      tpmPolicy: tpm.right,
      runtimePolicy: runtime.compiled,
      imaKeyring: keyring.right,
      measuredBoot: refstate === null || mbPolicy === undefined ? undefined : { policy: mbPolicy, refstate },
      options
    }
    const mask = quoteMask(tpm.right.mask, tpm.right.pcrs.keys(), v.runtime_policy_has_policy, refstate !== null)
    return { key: policyKey(v), policy, mask } satisfies CompiledAgent
  })
