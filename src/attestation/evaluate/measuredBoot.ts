/**
 * The measured-boot step (src/boot/evaluate.ts): when the agent sent its UEFI log, parse and replay
 * it (its boot aggregates also feed the IMA check), compare the replayed PCRs the policy depends on
 * with the quote, and let the named policy judge the reference state: on the first attestation
 * only (`measured_boot_evaluate = once`) or on every one (`always`), as Keylime.
 */
import type { Failure } from "../../../schemas/Evidence.js"
import { evaluateMeasuredBoot } from "../../boot/evaluate.js"
import { acceptAllPolicy, type MbPolicy } from "../../boot/policy.js"
import type { BootAggregates } from "../../boot/replay.js"
import type { HashAlg, PcrValues } from "../../tpm/Tpm.js"
import { unusedBootPcr } from "./failures.js"
import { MEASURED_BOOT_PCRS } from "./tpmPolicy.js"
import type { MeasuredBootPolicy } from "./types.js"

export const isEmptyRefState = (r: unknown): boolean =>
  r === undefined || r === null || r === "" || (typeof r === "object" && Object.keys(r).length === 0)

// The policy with its judgement switched off (once, after the first attestation): made once per policy.
const withoutJudgement = new WeakMap<MbPolicy, MbPolicy>()
const comparingOnly = (p: MbPolicy): MbPolicy => {
  let q = withoutJudgement.get(p)
  if (q === undefined) {
    q = { name: p.name, relevantPcrs: p.relevantPcrs, evaluate: () => "" }
    withoutJudgement.set(p, q)
  }
  return q
}

export interface MbStepResult {
  /** Log parse failures: Keylime reports them before every PCR check. */
  readonly parseFailures: ReadonlyArray<Failure>
  /** PCR mismatches, missing PCRs and the policy's verdict. */
  readonly failures: ReadonlyArray<Failure>
  /** Flat list of the log's boot aggregates (every bank, 8- and 10-PCR forms), for the IMA check. */
  readonly aggregates: ReadonlyArray<string> | undefined
  readonly bootAggregates: BootAggregates | undefined
}

const NONE: MbStepResult = { parseFailures: [], failures: [], aggregates: undefined, bootAggregates: undefined }

/** `quotedBank`: the hash_alg bank of the verified quote (Keylime compares that bank only). */
export const runMeasuredBoot = (
  log: string | null | undefined,
  hash: HashAlg,
  quotedBank: ReadonlyMap<number, Uint8Array> | undefined,
  mb: MeasuredBootPolicy | undefined,
  judge: boolean
): MbStepResult => {
  const refstate = mb === undefined || isEmptyRefState(mb.refstate) ? undefined : mb.refstate
  if (log === undefined || log === null || log === "") {
    if (refstate === undefined || quotedBank === undefined) return NONE
    // A reference state but no log: every measured-boot PCR in the quote is unaccounted for.
    const relevant = mb!.policy.relevantPcrs
    const failures: Array<Failure> = []
    for (const p of MEASURED_BOOT_PCRS) {
      if (quotedBank.has(p) && (relevant.size === 0 || relevant.has(p))) failures.push(unusedBootPcr(p))
    }
    return { parseFailures: [], failures, aggregates: undefined, bootAggregates: undefined }
  }
  const policy = mb === undefined ? acceptAllPolicy : judge ? mb.policy : comparingOnly(mb.policy)
  const quotedPcrs: PcrValues = quotedBank === undefined ? [] : [{ hash, values: quotedBank }]
  const r = evaluateMeasuredBoot({ log, quotedPcrs, refstate: refstate ?? null }, policy)
  const parseFailures: Array<Failure> = []
  const failures: Array<Failure> = []
  for (const f of r.failures) (f.type.startsWith("measured_boot.parser.") ? parseFailures : failures).push(f)
  const aggregates: Array<string> = []
  for (const list of Object.values(r.bootAggregates)) if (list !== undefined) aggregates.push(...list)
  return { parseFailures, failures, aggregates, bootAggregates: r.bootAggregates }
}
