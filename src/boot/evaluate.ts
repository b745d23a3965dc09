/**
 * The measured-boot check the verifier and `verify/evidence` run (Keylime's `Tpm.check_pcrs` MB
 * part plus `bootlog_evaluate`): parse the log, replay it, compare the replayed PCRs the policy
 * depends on with the quoted ones, then let the named policy judge the reference state.
 * Failures are values with Keylime's type strings; nothing here throws.
 */
import { Effect, Either } from "effect"
import type { Failure } from "../../schemas/Evidence.js"
import type { HashAlg } from "../tpm/hashAlg.js"
import type { PcrValues } from "../tpm/Tpm.js"
import { parseEventLog, parseEventLogBase64, type EventLog } from "./eventLog.js"
import { type MbPolicy, MbPolicyRegistry } from "./policy.js"
import { bootAggregates, type BootAggregates, replayPcrs } from "./replay.js"
import { toHex } from "./text.js"

const BOOT_PCR_MISMATCH = "SHA256 boot event log PCR value does not match"

/**
 * A measured-boot failure is the one attestation Failure (schemas/Evidence.ts); its type is a
 * Keylime event id, e.g. `measured_boot.invalid_pcr_4`, `measured_boot.policy_example`.
 */
export type MbFailure = Failure

export interface MbEvaluation {
  readonly failures: ReadonlyArray<MbFailure>
  /** Empty when the log could not be parsed. */
  readonly replayed: PcrValues
  readonly bootAggregates: BootAggregates
  readonly log: EventLog | undefined
}

export interface MbInput {
  /** Binary log, base64 text as the agent sends `mb_measurement_list`, or a log parsed already. */
  readonly log: Uint8Array | string | EventLog
  /** PCRs from the verified quote (only their banks are compared). */
  readonly quotedPcrs: PcrValues
  /** The reference state (parsed JSON); empty/absent means no measured-boot evaluation, as in Keylime. */
  readonly refstate: unknown
}

/** Keylime's config.MEASUREDBOOT_PCRS: the PCRs a boot log may speak for. */
export const MEASUREDBOOT_PCRS: ReadonlySet<number> = new Set([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 14, 15])

const isEmptyRefState = (r: unknown): boolean =>
  r === undefined || r === null || r === "" || (typeof r === "object" && Object.keys(r as object).length === 0)

const stripZeros = (hex: string) => hex.replace(/^0+/, "")

/** Pure evaluation with a given policy. */
export const evaluateMeasuredBoot = (input: MbInput, policy: MbPolicy): MbEvaluation => {
  const parsed =
    typeof input.log === "string" ? parseEventLogBase64(input.log) : input.log instanceof Uint8Array ? parseEventLog(input.log) : Either.right(input.log)
  if (Either.isLeft(parsed)) {
    const e = parsed.left
    const type = e.field === "base64" ? "measured_boot.parser.log.base64decode" : "measured_boot.parser.tpm2_eventlog.error"
    const message = e.field === "base64" ? "Measured boot log could not be decoded" : `Measured boot event log could not be parsed: ${e.message}`
    return { failures: [{ type, context: { message, event: e.eventIndex, field: e.field, offset: e.offset } }], replayed: [], bootAggregates: {}, log: undefined }
  }
  const log = parsed.right
  const replayed = replayPcrs(log)
  const aggregates = bootAggregates(replayed)
  const failures: Array<MbFailure> = []
  if (isEmptyRefState(input.refstate)) return { failures, replayed, bootAggregates: aggregates, log }

  const inQuote = new Set<number>()
  for (const bank of input.quotedPcrs) {
    const fromLog = replayed.find((b) => b.hash === bank.hash)
    for (const [pcr, quoted] of bank.values) {
      inQuote.add(pcr)
      if (!MEASUREDBOOT_PCRS.has(pcr) || !policy.relevantPcrs.has(pcr)) continue
      if (fromLog === undefined) {
        failures.push({
          type: "measured_boot.parser.invalid_pcrs_hashes",
          context: { message: `the boot event log has no ${bank.hash} bank`, hash: bank.hash }
        })
        break
      }
      const expected = toHex(fromLog.values.get(pcr) ?? new Uint8Array(0))
      const got = toHex(quoted)
      // Keylime compares with leading zeros stripped on both sides.
      // One failure per PCR even when several banks were quoted.
      if (stripZeros(expected) !== stripZeros(got) && !failures.some((f) => f.context["pcr"] === pcr)) {
        failures.push({
          type: `measured_boot.invalid_pcr_${pcr}`,
          // Keylime's key for this text is `context`; `message` is attest's (status, EAR, notifications)
          context: { message: BOOT_PCR_MISMATCH, context: BOOT_PCR_MISMATCH, pcr, hash: bank.hash as HashAlg, got, expected }
        })
      }
    }
  }
  const missing = [...policy.relevantPcrs].filter((p) => !inQuote.has(p)).sort((a, b) => a - b)
  if (missing.length > 0) {
    failures.push({ type: "measured_boot.missing_pcrs", context: { message: "PCRs are missing in quote", data: missing } })
    return { failures, replayed, bootAggregates: aggregates, log }
  }
  const reason = policy.evaluate(input.refstate, log)
  if (reason) {
    failures.push({
      type: `measured_boot.policy_${policy.name}`,
      context: { message: "Boot attestation failed", policy: policy.name, reason }
    })
  }
  return { failures, replayed, bootAggregates: aggregates, log }
}

/** The same, with the policy looked up by name in the registry (Keylime's `measured_boot_policy_name`). */
export const evaluateMeasuredBootNamed = Effect.fn("MeasuredBoot.evaluate")(function* (input: MbInput, policyName: string) {
  const registry = yield* MbPolicyRegistry
  const policy = yield* registry.get(policyName)
  return evaluateMeasuredBoot(input, policy)
})
