/**
 * What operations cost per attestation, in the verifier's own CPU: one pull round judged by
 * evaluateEvidence (the baseline, "off"), then the same with what the loop records per verdict
 * (attestations by result, the agent's state gauge, its freshness, the check duration: "metrics"),
 * and with an EAR signed for the verdict as well ("metrics + EAR", what a verifier issuing a token for
 * every verdict pays). Rounds of the three are interleaved and timed in CPU time of this process.
 */
import { Either } from "effect"
import { fromEvaluation } from "../src/ear/appraisal.js"
import { generateEarKey } from "../src/ear/key.js"
import { signEar } from "../src/ear/token.js"
import { unsafeObserveCheckDuration, unsafeObserveFreshness, unsafeRecordAttestation, unsafeSetAgentState } from "../src/ops/metrics.js"
import { evaluateEvidence } from "../src/verifier/index.js"
import { OperationalState } from "../src/verifier/states.js"
import { cpuMs, makeRound, NEW, POLICY, runFor, STATE } from "./_evaluateRound.js"

const ROUND_MS = 250
const ROUNDS = 9
const AGENTS = 1000

console.log(`node ${process.version}; one pull round: +${NEW} IMA entries on ${STATE}, ${POLICY}-digest policy, RSA AK; ${AGENTS} agents' series`)
const { policy, prior, round } = makeRound("rsa")
const key = generateEarKey()
let agent = 0
const nextAgent = () => `bench-agent-${(agent = (agent + 1) % AGENTS)}`

const off = () => evaluateEvidence(round, policy, prior).failures.length === 0
const withMetrics = () => {
  const id = nextAgent()
  const t0 = cpuMs()
  const e = evaluateEvidence(round, policy, prior)
  unsafeObserveCheckDuration("quote", (cpuMs() - t0) / 1000)
  unsafeRecordAttestation("pull", e.failures.length === 0, e.failures.map((f) => f.type))
  unsafeSetAgentState(id, OperationalState.GET_QUOTE)
  unsafeObserveFreshness(id, 1_700_000_000)
  return e.failures.length === 0
}
const withMetricsAndEar = () => {
  const id = nextAgent()
  const t0 = cpuMs()
  const e = evaluateEvidence(round, policy, prior)
  unsafeObserveCheckDuration("quote", (cpuMs() - t0) / 1000)
  unsafeRecordAttestation("pull", e.failures.length === 0, e.failures.map((f) => f.type))
  unsafeSetAgentState(id, OperationalState.GET_QUOTE)
  unsafeObserveFreshness(id, 1_700_000_000)
  return Either.isRight(signEar(fromEvaluation(id, e, { nonce: "BenchNonce0123456789" }), key, { verifierId: "bench", build: "attest bench" }, 1_700_000_000))
}

const sides = { off, metrics: withMetrics, ear: withMetricsAndEar }
const acc = { off: { n: 0, t: 0 }, metrics: { n: 0, t: 0 }, ear: { n: 0, t: 0 } }
for (const f of Object.values(sides)) runFor(300, f)
const orders = [["off", "metrics", "ear"], ["ear", "off", "metrics"], ["metrics", "ear", "off"]] as const
for (let r = 0; r < ROUNDS; r++) {
  for (const side of orders[r % 3]!) {
    const res = runFor(ROUND_MS, sides[side])
    acc[side].n += res.n
    acc[side].t += res.elapsed
  }
}
const us = (k: keyof typeof acc) => (acc[k].t * 1000) / acc[k].n
console.log(`off (evaluateEvidence)      ${us("off").toFixed(1)} µs CPU per attestation`)
console.log(`metrics                     ${us("metrics").toFixed(1)} µs   ratio ${(us("metrics") / us("off")).toFixed(3)}`)
console.log(`metrics + EAR per verdict   ${us("ear").toFixed(1)} µs   ratio ${(us("ear") / us("off")).toFixed(3)}`)
console.log(`BENCH ops_overhead_ratio ${(us("metrics") / us("off")).toFixed(3)}`)
console.log(`BENCH ops_overhead_ratio_with_ear ${(us("ear") / us("off")).toFixed(3)}`)
console.log(`BENCH ops_evaluate_us ${us("off").toFixed(1)} us`)
