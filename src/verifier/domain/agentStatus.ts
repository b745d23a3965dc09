/**
 * GET agent results per API version: 2.5+ as spec §2.2 and Keylime render them (has_* flags,
 * `attestation_status`, `attestation_period`, `maximum_attestation_interval`, `enc_alg` with its bit
 * length), 2.0–2.4 as the earlier documented variant (`allowlist_len`, `mb_refstate_len`,
 * `vtpm_policy`, `enc_alg` without bit length). Pure. A pull agent's status carries attest's two
 * loop facts beside Keylime's fields (withLoopFacts; a Keylime client ignores unknown keys).
 */
import type { AgentStatus, AnyAgentStatus, LegacyAgentStatus } from "../../../schemas/Verifier.js"
import { type ApiVersion, atLeast } from "../../http/versions.js"
import type { AgentView } from "./repo/rows.js"
import { attestationStatus } from "../../attestation/states.js"

export interface RenderSettings {
  readonly verifierIp: string
  readonly verifierPort: number
  /** `quote_interval` in seconds. */
  readonly quoteInterval: number
}

/** API versions from which the current status shape (and enc_alg bit lengths) apply. */
export const CURRENT_STATUS_FROM = "2.5"

export const usesCurrentStatus = (version: ApiVersion): boolean => atLeast(version, CURRENT_STATUS_FROM)

const WITH_BITS: Readonly<Record<string, string>> = { rsa: "rsa2048", ecc: "ecc256" }

/**
 * `enc_alg` as a version shows it: from 2.5 with the bit length (`rsa` → `rsa2048`, `ecc` →
 * `ecc256`), before 2.5 without (`rsa3072` → `rsa`). "" (no quote yet) stays "".
 */
export const encAlgForVersion = (encAlg: string, version: ApiVersion): string => {
  if (encAlg === "") return ""
  if (usesCurrentStatus(version)) return WITH_BITS[encAlg] ?? encAlg
  const m = /^(rsa|ecc)\d+$/.exec(encAlg)
  return m ? m[1]! : encAlg
}

/** "2s" for 2, "0.5s" for 0.5: Keylime's spelling of intervals. */
export const intervalText = (seconds: number): string => `${Number(seconds.toFixed(6))}s`

/** Push mode's timeout, also shown in pull mode: five quote intervals (keylime-wire.md §2). */
export const maximumAttestationInterval = (quoteInterval: number): number => quoteInterval * 5

export const renderAgentStatus = (view: AgentView, version: ApiVersion, settings: RenderSettings): AnyAgentStatus => {
  const common = {
    operational_state: view.operational_state,
    v: view.v,
    ip: view.ip,
    port: view.port,
    tpm_policy: view.tpm_policy
  }
  const tail = {
    accept_tpm_hash_algs: view.accept_tpm_hash_algs,
    accept_tpm_encryption_algs: view.accept_tpm_encryption_algs,
    accept_tpm_signing_algs: view.accept_tpm_signing_algs,
    hash_alg: view.hash_alg,
    enc_alg: encAlgForVersion(view.enc_alg, version),
    sign_alg: view.sign_alg,
    verifier_id: view.verifier_id,
    verifier_ip: settings.verifierIp,
    verifier_port: settings.verifierPort,
    severity_level: view.severity_level,
    last_event_id: view.last_event_id,
    // attest's addition, only when a failure said something (Keylime's bodies stay as they are otherwise)
    ...(view.last_event_message === null ? {} : { last_event_message: view.last_event_message }),
    attestation_count: view.attestation_count,
    last_received_quote: view.last_received_quote,
    last_successful_attestation: view.last_successful_attestation
  }
  if (!usesCurrentStatus(version)) {
    const legacy: LegacyAgentStatus = {
      ...common,
      vtpm_policy: view.vtpm_policy,
      meta_data: view.meta_data,
      allowlist_len: view.runtime_policy_digest_count,
      mb_refstate_len: view.mb_policy_key_count,
      ...tail
    }
    return legacy
  }
  const current: AgentStatus = {
    ...common,
    meta_data: view.meta_data,
    has_mb_refstate: view.mb_policy_has_policy ? 1 : 0,
    has_runtime_policy: view.runtime_policy_has_policy ? 1 : 0,
    ...tail,
    attestation_status: attestationStatus(view.operational_state),
    attestation_period: intervalText(settings.quoteInterval),
    maximum_attestation_interval: intervalText(maximumAttestationInterval(settings.quoteInterval))
  }
  return current
}

/**
 * Seconds since the agent's last verified quote, counted from its creation before the first (as the
 * gauge `attest_oldest_verified_quote_seconds` counts): what shows a stranded agent whatever the
 * cluster believes. Never negative (a clock a second behind the writer's).
 */
export const secondsSinceVerifiedQuote = (view: Pick<AgentView, "last_successful_attestation" | "created_at">, nowSeconds: number): number =>
  Math.max(0, nowSeconds - (view.last_successful_attestation > 0 ? view.last_successful_attestation : view.created_at))

/**
 * A pull agent's status with attest's loop facts (issue 24): `seconds_since_verified_quote` and
 * `owner_runner`, the runner whose loop last took the agent (cluster mode; null in single-process mode).
 */
export const withLoopFacts = <S extends AnyAgentStatus>(status: S, view: AgentView, nowSeconds: number): S => ({
  ...status,
  seconds_since_verified_quote: secondsSinceVerifiedQuote(view, nowSeconds),
  owner_runner: view.owner_runner
})
