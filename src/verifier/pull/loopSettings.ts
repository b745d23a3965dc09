/**
 * What the pull loop reads from the `[verifier]` section, derived once when its layer is built:
 * the state machine's intervals and severities, the policy compiler's settings, this verifier's id.
 */
import { Effect, Either } from "effect"
import type { CompileSettings } from "../../attestation/compileAgentPolicy.js"
import type { VerifierOptions } from "../../config/sections.js"
import { severityOf, severityPolicyFromOptions } from "../../attestation/evaluate/severity.js"
import type { MachineConfig } from "./machine.js"
import { compileSettingsOf } from "../domain/policy/storedPolicies.js"

/** Used when an agent row has no `supported_version` (every attest and rust-keylime agent serves it). */
export const DEFAULT_AGENT_API_VERSION = "2.2"

export interface LoopSettings {
  readonly machine: MachineConfig
  readonly compile: CompileSettings
  /** API version used when the row has no `supported_version`. */
  readonly defaultApiVersion: string
  /** This verifier's `verifier_id`: it polls only its own agents. */
  readonly verifierId: string
  /** Seconds to wait before reading the row again after the database failed. */
  readonly storeRetrySeconds: number
}

export const loopSettingsOf = (config: VerifierOptions): Effect.Effect<LoopSettings> =>
  Effect.gen(function*() {
    const severity = severityPolicyFromOptions(config)
    // the verifier's start-up checks the severity options; a bad one here falls back to Keylime's default
    if (Either.isLeft(severity)) yield* Effect.logError(`${severity.left.message}; every failure is the highest severity`)
    const policy = Either.getOrElse(severity, () => Either.getOrThrow(severityPolicyFromOptions({ severity_labels: config.severity_labels, severity_policy: "[]" })))
    return {
      machine: {
        quoteInterval: config.quote_interval,
        retryInterval: config.retry_interval,
        exponentialBackoff: config.exponential_backoff,
        maxRetries: config.max_retries,
        severityOf: (eventId) => severityOf(policy, eventId).level,
        maxSeverity: policy.max.level
      },
      compile: compileSettingsOf(config, policy, "pull"),
      defaultApiVersion: DEFAULT_AGENT_API_VERSION,
      verifierId: config.verifier_id,
      storeRetrySeconds: Math.max(1, config.retry_interval)
    }
  })
