/**
 * `evaluateEvidence`: the one judgement of evidence that the pull loop, push attestations and
 * `verify/evidence` share. Pure and synchronous; Keylime's order (keylime-wire.md §3.3, §6):
 * NK present → algorithm gates → IMA start entry → quote → clock → PCR checks (boot-log parse,
 * PCR 16 binding, IMA, tpm_policy, measured boot, missing PCRs). A failure of the quote or of
 * what precedes it ends the evaluation (nothing after it could be trusted); PCR findings are
 * all collected.
 *
 * Given a clock (`evaluateEvidence`'s fourth argument), it also reports when each stage ran
 * (`Evaluation.stages`: quote, pcrs, ima, boot) for the caller's histograms and spans
 * (src/ops/stages.ts); without one nothing is read and the result is the same.
 */
import { type Failure, makeFailure } from "../../../schemas/Evidence.js"
import { toHex } from "../../crypto/encoding.js"
import { decideStart, type ImaState } from "../../ima/state.js"
import type { VerifiedQuote } from "../../tpm/verifyQuote.js"
import { gateAlgorithms } from "./algorithms.js"
import { clockProblem, storedClockOf } from "./clock.js"
import { clockValidation, VerifierFailureType, noPubkey, unusedImaPcr } from "./failures.js"
import { runIma } from "./ima.js"
import { runMeasuredBoot } from "./measuredBoot.js"
import { checkNkBinding, checkTpmPolicy } from "./pcrs.js"
import { checkQuote } from "./quote.js"
import { rateFailures } from "./severity.js"
import { type EvaluationState, initialEvaluationState } from "./state.js"
import { IMA_PCR } from "./tpmPolicy.js"
import type {
  AgentPolicy,
  Claims,
  Evaluation,
  Evidence,
  StageClock,
  StageTiming,
  TeeEvidence,
  TpmClaims,
  TpmEvidence,
  VerificationStage
} from "./types.js"

const verdict = (
  policy: AgentPolicy,
  failures: ReadonlyArray<Failure>,
  nextState: EvaluationState,
  claims: Claims | undefined,
  stages: ReadonlyArray<StageTiming> | undefined,
  restart = false,
  nkChanged = false
): Evaluation =>
  stages === undefined
    ? { failures, severity: rateFailures(policy.options.severity, failures), nextState, claims, restart, nkChanged }
    : { failures, severity: rateFailures(policy.options.severity, failures), nextState, claims, restart, nkChanged, stages }

/** Stage timings when there is a clock: `begin` reads it, `end` records the stage from that reading. */
class StageTimer {
  readonly stages: Array<StageTiming> = []
  private at = 0
  constructor(private readonly now: StageClock) {}
  begin(): void {
    this.at = this.now()
  }
  end(stage: VerificationStage): void {
    this.stages.push({ stage, start: this.at, end: this.now() })
  }
}

const hexRecord = (values: ReadonlyMap<number, Uint8Array> | undefined): Record<string, string> => {
  const out: Record<string, string> = {}
  if (values !== undefined) for (const [p, v] of values) out[p] = toHex(v)
  return out
}

/** One literal (absent parts undefined, which JSON leaves out): built on every round. */
const claimsOf = (
  ev: TpmEvidence,
  q: VerifiedQuote,
  bank: ReadonlyMap<number, Uint8Array> | undefined,
  hash: string,
  ima: TpmClaims["ima"],
  bootAggregates: TpmClaims["boot_aggregates"]
): TpmClaims => ({
  type: "tpm",
  hash_alg: hash,
  enc_alg: ev.enc_alg,
  sign_alg: ev.sign_alg,
  pcrs: hexRecord(bank),
  clock: {
    clock: q.clockInfo.clock.toString(),
    reset_count: q.clockInfo.resetCount,
    restart_count: q.clockInfo.restartCount,
    safe: q.clockInfo.safe
  },
  ima,
  boot_aggregates: bootAggregates
})

/** The stored algorithms object when unchanged (the usual case), so nothing new is allocated for it. */
const algorithmsOf = (prior: EvaluationState["alg"], hash: string, enc: string, sign: string): EvaluationState["alg"] =>
  prior.hash === hash && prior.enc === enc && prior.sign === sign ? prior : { hash, enc, sign }

const present = (s: string | null | undefined): s is string => s !== undefined && s !== null && s !== ""

const evaluateTpm = (ev: TpmEvidence, policy: AgentPolicy, prior: EvaluationState, now: StageClock | undefined): Evaluation => {
  const opts = policy.options
  const failures: Array<Failure> = []
  const timer = now === undefined ? undefined : new StageTimer(now)
  const stages = timer?.stages

  // 1. The NK: sent with full quotes, otherwise the one of the last accepted quote.
  const received = present(ev.pubkey) ? ev.pubkey : undefined
  const nk = received ?? prior.nk ?? undefined
  if (opts.bindNk && nk === undefined) {
    failures.push(noPubkey())
    return verdict(policy, failures, prior, undefined, stages)
  }

  // 2. Algorithm gates.
  const gated = gateAlgorithms(ev.hash_alg, ev.enc_alg, ev.sign_alg, policy.accept)
  if ("type" in gated) {
    failures.push(gated)
    return verdict(policy, failures, prior, undefined, stages)
  }
  const alg = algorithmsOf(prior.alg, gated.hash, ev.enc_alg ?? "", ev.sign_alg ?? "")

  // 3. Where the IMA list starts against the stored progress (Keylime decides this before the quote).
  const start = decideStart(prior.ima, ev.ima_measurement_list_entry ?? 0, ev.boottime)
  if (start._tag === "Reject") failures.push(start.failure)

  // 4. The quote. Nothing below may be trusted without it.
  timer?.begin()
  const q = checkQuote(policy.ak, ev.quote, ev.nonce, gated.hash, gated.scheme)
  if (q._tag === "Left") {
    failures.push(q.left)
    timer?.end("quote")
    return verdict(policy, failures, { ...prior, ima: start.state, alg }, undefined, stages)
  }
  const quote = q.right

  // 5. The TPM clock against the last accepted quote.
  if (opts.checkClock) {
    const problem = clockProblem(prior.clock, quote.clockInfo)
    if (problem !== undefined) {
      failures.push(clockValidation(problem))
      timer?.end("quote")
      return verdict(policy, failures, { ...prior, ima: start.state, alg }, undefined, stages)
    }
  }
  const bank = quote.pcrs.find((b) => b.hash === gated.hash)?.values

  // The agent rebooted: its list restarts, so ask again from entry 0; nothing is judged or counted.
  // Its NK may be new too: forgetting the stored one makes the next quote a full one.
  if (start._tag === "Retry") {
    timer?.end("quote")
    const claims = claimsOf(ev, quote, bank, gated.hash, undefined, undefined)
    return verdict(policy, failures, { ...prior, ima: start.state, nk: null, clock: storedClockOf(quote.clockInfo), alg }, claims, stages, true)
  }
  // PCR 16 = the NK binds the quote to this agent's NK: part of the quote stage (reported after
  // the boot log's parse failures, Keylime's order)
  const nkFailure = opts.bindNk ? checkNkBinding(bank, gated.hash, nk!) : undefined
  timer?.end("quote")

  // 6. PCRs of the hash_alg bank.
  const judgeBoot = opts.measuredBootEvaluate === "always" || prior.count === 0
  timer?.begin()
  const mb = runMeasuredBoot(ev.mb_measurement_list, gated.hash, bank, policy.measuredBoot, judgeBoot)
  if (timer !== undefined && (present(ev.mb_measurement_list) || policy.measuredBoot !== undefined)) timer.end("boot")
  for (const f of mb.parseFailures) failures.push(f)
  if (nkFailure !== undefined) failures.push(nkFailure)

  let ima: ImaState = start.state
  let imaClaims: TpmClaims["ima"]
  const quotedPcr10 = bank?.get(IMA_PCR)
  if (quotedPcr10 !== undefined) {
    const list = ev.ima_measurement_list
    if (list === undefined || list === null) failures.push(unusedImaPcr())
    else if (start._tag === "Continue") {
      timer?.begin()
      const r = runIma({
        list,
        startEntry: ev.ima_measurement_list_entry ?? 0,
        state: prior.ima,
        policy: policy.runtimePolicy,
        bank: gated.hash,
        quotedPcr10,
        bootAggregates: mb.aggregates,
        keyring: policy.imaKeyring,
        bootTime: ev.boottime,
        reportTomtou: opts.reportTomtou
      })
      timer?.end("ima")
      for (const f of r.failures) failures.push(f)
      ima = r.state
      imaClaims = { entries: r.entries, matched: r.matchedEntries, next_entry: r.state.nextEntry }
    }
  }

  const missing: Array<Failure> = []
  timer?.begin()
  checkTpmPolicy(bank, policy.tpmPolicy, opts.bindNk, failures, missing)
  timer?.end("pcrs")
  for (const f of mb.failures) failures.push(f)
  for (const f of missing) failures.push(f)

  const claims = claimsOf(ev, quote, bank, gated.hash, imaClaims, mb.bootAggregates)
  if (failures.length > 0) return verdict(policy, failures, { ...prior, ima, alg }, claims, stages)
  const nextState: EvaluationState = {
    ima,
    nk: nk ?? prior.nk,
    clock: storedClockOf(quote.clockInfo),
    count: prior.count + 1,
    alg
  }
  return verdict(policy, failures, nextState, claims, stages, false, received !== undefined && received !== prior.nk)
}

const evaluateTee = (ev: TeeEvidence, policy: AgentPolicy, prior: EvaluationState): Evaluation => {
  if (policy.verifyTee === undefined) {
    const f = makeFailure(VerifierFailureType.teeInvalid, "TEE evidence cannot be verified: this verifier has no TEE verifier")
    return verdict(policy, [f], prior, undefined, undefined)
  }
  const r = policy.verifyTee(ev.data)
  const failures =
    r.valid || r.failures.length > 0 ? r.failures : [makeFailure(VerifierFailureType.teeInvalid, "the TEE verifier found the evidence invalid")]
  const valid = r.valid && failures.length === 0
  return verdict(policy, failures, valid ? { ...prior, count: prior.count + 1 } : prior, { type: "tee", claims: r.claims }, undefined)
}

/**
 * Judges one attestation's evidence against the agent's compiled policy, from the state the
 * previous verdict left (`initialEvaluationState` for the first, and always for `verify/evidence`).
 * With `now` (a monotonic clock), `stages` says when each TPM stage ran.
 */
export const evaluateEvidence = (
  evidence: Evidence,
  policy: AgentPolicy,
  prior: EvaluationState = initialEvaluationState,
  now?: StageClock
): Evaluation => evidence._tag === "tpm" ? evaluateTpm(evidence, policy, prior, now) : evaluateTee(evidence, policy, prior)
