/**
 * THE compiler of an agent's configuration into the evaluator's AgentPolicy, for every path: the
 * pull loop, the push verdict and verify/evidence. The model decides only what differs by nature:
 * the NK binding (pull has a V key to bind; push and verify/evidence have none) and the clock
 * comparison (no previous quote in verify/evidence). Everything else is compiled the same way, and
 * whatever the verifier cannot fully honour fails closed with AgentConfigUnusable naming the field.
 * Pure: the stored policies come compiled (src/verifier/domain/policy/storedPolicies.ts reads them).
 */
import { Either } from "effect"
import type { MbPolicy } from "../boot/policy.js"
import type { CompiledPolicy } from "../ima/policy.js"
import { keyringFromJson } from "../ima/signatures.js"
import { fromBase64 } from "../tpm/bytes.js"
import type { SeverityPolicy } from "./evaluate/severity.js"
import { emptyTpmPolicy, parseTpmPolicy, type TpmPolicy } from "./evaluate/tpmPolicy.js"
import type { AcceptedAlgorithms, AgentPolicy, EvaluateOptions } from "./evaluate/types.js"
import { AgentConfigUnusable } from "./AgentConfigUnusable.js"

/** How the agent's evidence reaches the verifier. */
export type AttestationModel = "pull" | "push" | "evidence"

/** The agent's configuration as stored (or, for verify/evidence, as the request carries it). */
export interface AgentConfigFacts {
  readonly agentId: string
  /** Base64 of the AK's TPM2B_PUBLIC. */
  readonly akTpm: string
  /** The `tpm_policy` JSON text; undefined for none (verify/evidence without one). */
  readonly tpmPolicy: string | undefined
  /** The tenant's keyring JSON ("" for none); undefined where the request has no such field. */
  readonly imaSignVerificationKeys: string | undefined
  /** Algorithm gates; undefined (verify/evidence) checks only that hash_alg is a known hash. */
  readonly accept: AcceptedAlgorithms | undefined
}

/** The agent's runtime policy and measured-boot reference state, compiled by whoever read them. */
export interface AgentStoredPolicies {
  /** undefined: Keylime's empty runtime policy. */
  readonly runtime: CompiledPolicy | undefined
  /** The parsed reference state; undefined for none (a parsed JSON null is a reference state). */
  readonly refstate?: unknown
}

export interface CompileSettings {
  readonly model: AttestationModel
  readonly severity: SeverityPolicy
  /** `[verifier] measured_boot_policy_name`, and the policy it names (undefined: no such policy). */
  readonly measuredBootPolicyName: string
  readonly measuredBootPolicy: MbPolicy | undefined
  readonly measuredBootEvaluate: "once" | "always"
  readonly reportTomtou: boolean
}

/** What differs by the nature of the model, and nothing else. */
const optionsOf = (s: CompileSettings): EvaluateOptions => ({
  severity: s.severity,
  // a one-shot check has no earlier attestation to have judged the log "once"
  measuredBootEvaluate: s.model === "evidence" ? "always" : s.measuredBootEvaluate,
  reportTomtou: s.reportTomtou,
  // only a pull agent has an NK (its V key) to bind; Keylime's push and one-shot checks bind none
  bindNk: s.model === "pull",
  // verify/evidence has no previous quote to compare clocks with
  checkClock: s.model !== "evidence"
})

export const compileAgentPolicy = (
  config: AgentConfigFacts,
  stored: AgentStoredPolicies,
  settings: CompileSettings
): Either.Either<AgentPolicy, AgentConfigUnusable> => {
  const unusable = (field: string, reason: string) => Either.left(new AgentConfigUnusable({ agentId: config.agentId, field, reason }))
  let tpmPolicy: TpmPolicy = emptyTpmPolicy
  if (config.tpmPolicy !== undefined) {
    const tpm = parseTpmPolicy(config.tpmPolicy)
    if (Either.isLeft(tpm)) return unusable("tpm_policy", `${tpm.left.field} ${tpm.left.reason}`)
    tpmPolicy = tpm.right
  }
  const ak = fromBase64(config.akTpm)
  if (ak === undefined) return unusable("ak_tpm", "is not base64 (a TPM2B_PUBLIC is expected)")
  let imaKeyring: AgentPolicy["imaKeyring"]
  if (config.imaSignVerificationKeys !== undefined) {
    const keyring = keyringFromJson(config.imaSignVerificationKeys)
    if (Either.isLeft(keyring)) return unusable("ima_sign_verification_keys", keyring.left)
    imaKeyring = keyring.right
  }
  const refstate = stored.refstate
  if (refstate !== undefined && settings.measuredBootPolicy === undefined) {
    return unusable("measured_boot_policy_name", `'${settings.measuredBootPolicyName}' is not a measured-boot policy`)
  }
  return Either.right({
    ak,
    accept: config.accept,
    tpmPolicy,
    runtimePolicy: stored.runtime,
    imaKeyring,
    measuredBoot: refstate === undefined || settings.measuredBootPolicy === undefined ? undefined : { policy: settings.measuredBootPolicy, refstate },
    options: optionsOf(settings)
  })
}
