/**
 * What operations cost per attestation, in the verifier's own CPU, in the same run. Each side runs
 * the pull loop's per-verdict work as the loop does it (one Effect program per attestation, native
 * tracer as without `otlp_endpoint`): decode the agent's answer (envelope JSON through the
 * IntegrityQuote schema), judge it (evaluateEvidence in the `verifier.evaluate` span inside a
 * `verifier.cycle` span), encode the evaluator's next state for the row; network and database are
 * left out (they are the same on both sides, so the ratio would only shrink with them).
 *
 *   off        : that work alone
 *   ops on     : + the stage clock and the stage histograms (src/ops/stages.ts; its child spans are
 *                made only for an exporting tracer, as src/ops/Tracing.ts installs with `otlp_endpoint`),
 *                attestations by result, the agent's state gauge, its freshness, and the verdict's
 *                EAR facts (src/ear/verdictFacts.ts, what a relying party's EAR is signed from)
 *   EAR/verdict: ops on + an ES256 EAR signed for every verdict (not what attest does: it signs on
 *                request; shown for the price of that choice)
 *
 * Rounds of the three are interleaved and timed in CPU time of this process; a ratio is the median
 * of the rounds' ratios (the machine is shared, its load drifts). Also printed: the
 * cost of one EAR signed on request from stored facts, and the mean time of each stage.
 */
import { Effect, Either, Schema } from "effect"
import { IntegrityQuote } from "../schemas/Agent.js"
import { generateEarKey } from "../src/ear/key.js"
import { signEar } from "../src/ear/token.js"
import { earVerdictOfFacts, readVerdictFacts, verdictFactsJson } from "../src/ear/verdictFacts.js"
import { unsafeObserveFreshness, unsafeRecordAttestation, unsafeSetAgentState } from "../src/ops/metrics.js"
import { evaluateTimed, stageClock, stagesOf } from "../src/ops/stages.js"
import { encodeEvaluationState, evaluateEvidence, type Evaluation, type TpmEvidence } from "../src/verifier/index.js"
import { OperationalState } from "../src/attestation/states.js"
import { cpuMs, makeRound, NEW, POLICY, runFor, STATE } from "./_evaluateRound.js"

// short interleaved rounds: the machine is shared and its load drifts; each ratio is the median
// of the rounds' own ratios (the three sides of a round ran back to back)
const ROUND_MS = 100
const ROUNDS = 27
const AGENTS = 1000
const NONCE = "BenchNonce0123456789"

console.log(`node ${process.version}; one pull round: +${NEW} IMA entries on ${STATE}, ${POLICY}-digest policy, RSA AK; ${AGENTS} agents' series`)
const { policy, prior, round } = makeRound("rsa")
const key = generateEarKey()
const earOptions = { verifierId: "bench", build: "attest bench" }
let agent = 0
const nextAgent = () => `bench-agent-${(agent = (agent + 1) % AGENTS)}`

// the agent's answer as the verifier receives it (AgentClient decodes the body through the schema)
const body = JSON.stringify({
  code: 200,
  status: "Success",
  results: {
    quote: round.quote,
    hash_alg: round.hash_alg,
    enc_alg: round.enc_alg,
    sign_alg: round.sign_alg,
    boottime: round.boottime,
    ima_measurement_list: round.ima_measurement_list,
    ima_measurement_list_entry: round.ima_measurement_list_entry
  }
})
const decodeAnswer = Schema.decodeUnknownSync(Schema.parseJson(Schema.Struct({ results: IntegrityQuote })))
const evidenceOf = (): TpmEvidence => {
  const answer = decodeAnswer(body).results
  return { _tag: "tpm", nonce: new TextEncoder().encode(NONCE), ...answer, ima_measurement_list_entry: answer.ima_measurement_list_entry ?? undefined }
}

const persistOff = (e: Evaluation) => encodeEvaluationState(e.nextState).length > 0 && e.failures.length === 0

const off = Effect.suspend(() => {
  const evidence = evidenceOf()
  return Effect.sync(() => evaluateEvidence(evidence, policy, prior)).pipe(Effect.withSpan("verifier.evaluate"))
}).pipe(Effect.map(persistOff), Effect.withSpan("verifier.cycle"))

const opsOn = (signEach: boolean) =>
  Effect.suspend(() => {
    const evidence = evidenceOf()
    return evaluateTimed((now) => evaluateEvidence(evidence, policy, prior, now), stagesOf).pipe(Effect.withSpan("verifier.evaluate"))
  }).pipe(
    Effect.map((e) => {
      const id = nextAgent()
      const facts = verdictFactsJson(e, NONCE, 1_700_000_000)
      const valid = e.failures.length === 0
      unsafeRecordAttestation("pull", valid, e.failures.map((f) => f.type))
      unsafeSetAgentState(id, OperationalState.GET_QUOTE)
      if (valid) unsafeObserveFreshness(id, 1_700_000_000)
      if (signEach) {
        const token = signEar(earVerdictOfFacts(id, Either.getOrThrow(readVerdictFacts(facts))), key, earOptions, 1_700_000_000)
        if (Either.isLeft(token)) return false
      }
      return persistOff(e) && facts.length > 0
    }),
    Effect.withSpan("verifier.cycle")
  )
const on = opsOn(false)
const onWithEar = opsOn(true)

const sides = { off: () => Effect.runSync(off), metrics: () => Effect.runSync(on), ear: () => Effect.runSync(onWithEar) }
const acc = { off: { n: 0, t: 0 }, metrics: { n: 0, t: 0 }, ear: { n: 0, t: 0 } }
const ratios = { metrics: [] as Array<number>, ear: [] as Array<number> }
for (const f of Object.values(sides)) runFor(300, f)
const orders = [["off", "metrics", "ear"], ["ear", "off", "metrics"], ["metrics", "ear", "off"]] as const
for (let r = 0; r < ROUNDS; r++) {
  const round: Record<string, number> = {}
  for (const side of orders[r % 3]!) {
    const res = runFor(ROUND_MS, sides[side])
    acc[side].n += res.n
    acc[side].t += res.elapsed
    round[side] = res.elapsed / res.n
  }
  ratios.metrics.push(round["metrics"]! / round["off"]!)
  ratios.ear.push(round["ear"]! / round["off"]!)
}
const us = (k: keyof typeof acc) => (acc[k].t * 1000) / acc[k].n
const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

// one EAR signed on request from stored facts (what GET …/attestations/latest does for a pull agent)
const stored = verdictFactsJson(evaluateEvidence(round, policy, prior), NONCE, 1_700_000_000)
const signOnRequest = () => Either.isRight(Either.flatMap(readVerdictFacts(stored), (f) => signEar(earVerdictOfFacts("bench-agent", f), key, earOptions, f.at)))
const signed = runFor(1000, signOnRequest)

// the stages' mean durations, from the evaluator's own timings
const stageSum = new Map<string, { n: number; ms: number }>()
const t0 = cpuMs()
while (cpuMs() - t0 < 1000) {
  for (const s of evaluateEvidence(round, policy, prior, stageClock).stages ?? []) {
    const a = stageSum.get(s.stage) ?? { n: 0, ms: 0 }
    a.n++
    a.ms += s.end - s.start
    stageSum.set(s.stage, a)
  }
}
const stageUs = (stage: string) => {
  const a = stageSum.get(stage)
  return a === undefined ? 0 : (a.ms * 1000) / a.n
}

console.log(`off (decode, judge, encode state; cycle spans)   ${us("off").toFixed(1)} µs CPU per attestation`)
console.log(`ops on (stage histograms, counters, EAR facts)  ${us("metrics").toFixed(1)} µs   ratio ${median(ratios.metrics).toFixed(3)} (median of ${ROUNDS} rounds; of the totals ${(us("metrics") / us("off")).toFixed(3)})`)
console.log(`ops on + an EAR signed per verdict              ${us("ear").toFixed(1)} µs   ratio ${median(ratios.ear).toFixed(3)} (of the totals ${(us("ear") / us("off")).toFixed(3)})`)
console.log(`an EAR signed on request from stored facts      ${((signed.elapsed * 1000) / signed.n).toFixed(1)} µs`)
console.log(`stages: ${["quote", "pcrs", "ima", "boot"].map((s) => `${s} ${stageUs(s).toFixed(1)} µs`).join(", ")} (no boot log in this round)`)
console.log(`BENCH ops_overhead_ratio ${median(ratios.metrics).toFixed(3)}`)
console.log(`BENCH ops_overhead_ratio_ear_per_verdict ${median(ratios.ear).toFixed(3)}`)
console.log(`BENCH ops_attestation_us ${us("off").toFixed(1)} us`)
console.log(`BENCH ops_ear_on_request_us ${((signed.elapsed * 1000) / signed.n).toFixed(1)} us`)
for (const s of ["quote", "pcrs", "ima"]) console.log(`BENCH ops_stage_${s}_us ${stageUs(s).toFixed(1)} us`)
