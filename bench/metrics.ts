/**
 * Metrics costs (src/ops/metrics.ts, src/ops/prometheus.ts):
 * - `/metrics` scrape time with 10,000 agents registered (each: its state count, its freshness
 *   gauge, attestation counters, the check histograms), the whole scrape as GET /metrics does it
 *   (scrape hooks + Metric.snapshot + rendering); baseline: Metric.snapshot alone. And the same with
 *   10,000 labelled histograms on top (one per agent, 16 buckets: a worst case attest does not have).
 * - recording one attestation's metrics (result, state, freshness, three check durations) against
 *   the same loop doing nothing, in ns per record; the sync recorders and the Effect ones.
 *
 *   npm run bench -- metrics [agents]
 */
import { Effect, Metric, MetricBoundaries } from "effect"
import { performance } from "node:perf_hooks"
import {
  DURATION_BUCKETS,
  observeCheckDuration,
  observeFreshness,
  recordAttestation,
  setAgentState,
  unsafeObserveCheckDuration,
  unsafeObserveFreshness,
  unsafeRecordAttestation,
  unsafeSetAgentState
} from "../src/ops/metrics.js"
import { scrapePrometheus } from "../src/ops/prometheus.js"
import { OperationalState } from "../src/attestation/states.js"

const AGENTS = Number(process.argv[2] ?? 10_000)
const ids = Array.from({ length: AGENTS }, (_, i) => `d432fbb3-d2f1-4a97-9ef7-${String(i).padStart(12, "0")}`)
const now = Date.now() / 1000

for (const id of ids) {
  unsafeSetAgentState(id, OperationalState.GET_QUOTE)
  unsafeObserveFreshness(id, now - Math.random() * 60)
  unsafeRecordAttestation("pull", true)
  unsafeObserveCheckDuration("quote", 0.0004)
  unsafeObserveCheckDuration("ima", 0.002)
}
unsafeRecordAttestation("pull", false, ["ima.validation.ima-ng.not_in_allowlist"])

const median = (xs: Array<number>) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

const timeScrapes = (runs: number) => {
  const scrape: Array<number> = []
  const snapshot: Array<number> = []
  let bytes = 0
  let lines = 0
  for (let i = 0; i < runs; i++) {
    let t = performance.now()
    const text = Effect.runSync(scrapePrometheus)
    scrape.push(performance.now() - t)
    bytes = text.length
    lines = text.split("\n").length - 1
    t = performance.now()
    Effect.runSync(Metric.snapshot)
    snapshot.push(performance.now() - t)
  }
  return { scrape: median(scrape), snapshot: median(snapshot), bytes, lines }
}

timeScrapes(3)
const catalog = timeScrapes(9)
console.log(`scrape with ${AGENTS} agents: ${catalog.scrape.toFixed(1)} ms (${catalog.lines} lines, ${(catalog.bytes / 1024).toFixed(0)} KiB); Metric.snapshot alone ${catalog.snapshot.toFixed(1)} ms; ratio ${(catalog.scrape / catalog.snapshot).toFixed(2)}x`)

// recording one attestation's metrics vs the same loop doing nothing
const N = 200_000
const recordOne = (i: number) => {
  const id = ids[i % AGENTS]!
  unsafeRecordAttestation("pull", true)
  unsafeSetAgentState(id, OperationalState.GET_QUOTE)
  unsafeObserveFreshness(id, now + i)
  unsafeObserveCheckDuration("quote", 0.0004)
  unsafeObserveCheckDuration("ima", 0.002)
  unsafeObserveCheckDuration("boot", 0.001)
}
let sink = 0
const nothing = (i: number) => {
  sink += ids[i % AGENTS]!.length
}
const loop = (f: (i: number) => void) => {
  const t = performance.now()
  for (let i = 0; i < N; i++) f(i)
  return ((performance.now() - t) * 1e6) / N
}
const recordEffect = (i: number) =>
  Effect.gen(function*() {
    const id = ids[i % AGENTS]!
    yield* recordAttestation("pull", true)
    yield* setAgentState(id, OperationalState.GET_QUOTE)
    yield* observeFreshness(id, now + i)
    yield* observeCheckDuration("quote", 0.0004)
    yield* observeCheckDuration("ima", 0.002)
    yield* observeCheckDuration("boot", 0.001)
  })
const nothingEffect = (i: number) => Effect.sync(() => nothing(i))
const loopEffect = (f: (i: number) => Effect.Effect<void>) => {
  const t = performance.now()
  Effect.runSync(Effect.gen(function*() {
    for (let i = 0; i < N; i++) yield* f(i)
  }))
  return ((performance.now() - t) * 1e6) / N
}
loop(recordOne)
loop(nothing)
const sync = { record: [] as Array<number>, base: [] as Array<number> }
const eff = { record: [] as Array<number>, base: [] as Array<number> }
for (let r = 0; r < 5; r++) {
  sync.record.push(loop(recordOne))
  sync.base.push(loop(nothing))
  eff.record.push(loopEffect(recordEffect))
  eff.base.push(loopEffect(nothingEffect))
}
const syncRecord = median(sync.record)
const syncBase = median(sync.base)
const effRecord = median(eff.record)
const effBase = median(eff.base)
console.log(`one attestation's metrics (result, state, freshness, 3 check durations): ${syncRecord.toFixed(0)} ns sync vs ${syncBase.toFixed(0)} ns doing nothing (${(syncRecord - syncBase).toFixed(0)} ns added)`)
console.log(`the same through the Effect recorders: ${effRecord.toFixed(0)} ns vs ${effBase.toFixed(0)} ns for one Effect.sync doing nothing (${(effRecord - effBase).toFixed(0)} ns added)`)

// worst case: one labelled histogram per agent on top of the catalog
const perAgent = Metric.histogram("bench_agent_cycle_seconds", MetricBoundaries.fromIterable(DURATION_BUCKETS), "bench only: one histogram per agent")
for (const id of ids) perAgent.pipe(Metric.tagged("agent_id", id)).unsafeUpdate(0.003, [])
timeScrapes(2)
const heavy = timeScrapes(5)
console.log(`scrape with ${AGENTS} per-agent histograms on top: ${heavy.scrape.toFixed(1)} ms (${heavy.lines} lines, ${(heavy.bytes / 1024 / 1024).toFixed(1)} MiB); snapshot alone ${heavy.snapshot.toFixed(1)} ms`)
if (sink < 0) console.log(sink)

console.log(`BENCH metrics_scrape_ms_10k ${catalog.scrape.toFixed(1)} ms`)
console.log(`BENCH metrics_scrape_ratio_to_snapshot ${(catalog.scrape / catalog.snapshot).toFixed(2)}`)
console.log(`BENCH metrics_scrape_ms_10k_histograms ${heavy.scrape.toFixed(1)} ms`)
console.log(`BENCH metrics_record_attestation_ns ${(syncRecord - syncBase).toFixed(0)} ns`)
console.log(`BENCH metrics_record_attestation_effect_ns ${(effRecord - effBase).toFixed(0)} ns`)
