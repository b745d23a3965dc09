/**
 * IMA engine cost. (a) full evaluation of 100,000 ima-ng entries (template-hash recomputation, PCR 10
 * replay in the sha256 bank, policy lookups) from one list string; (b) what the verifier does per
 * attestation: +10 and +1,000 new entries on the incremental state after 100,000; (c) 1,000,000
 * entries in ten 100,000-entry rounds, evaluated incrementally (lists generated first); (d) +10 and
 * +1,000 on the state after 1,000,000 with its 1,000,000-name policy; (e) +1,000 on both states with
 * the caches emptied before each call, as in a verifier where other agents ran in between. Policies come through
 * `loadRuntimePolicy`, as the verifier loads them. Baselines in the same run: a loop doing only the two
 * SHA-256 calls per entry a replay needs (template data, extend), for the full list and, call by call,
 * beside every incremental call (so the machine's noise shows in both: on a shared 2-core machine the
 * CPU time of the same call varies 2–5× with the neighbours' load); with `--baseline <checkout>`, also
 * that checkout's engine (e.g. /work/main), alternating with this one call by call.
 *
 * An incremental call is the verifier's whole IMA step on a state that already holds 100,000 (or
 * 1,000,000) entries: parse the new lines, template hashes, PCR 10 replay from the stored running
 * value, policy evaluation, the next state, and that state encoded as the loop stores it
 * (`encodeEvaluationState`). The pull loop keeps the decoded state in memory between rounds, as here.
 *
 * Spread: p50 and p95 of every series; per call the main thread's share, the other threads' CPU
 * (V8's concurrent GC and compiler) and whether a collection paused it (bench/_imaSpread.ts), so the
 * slowest calls can be told apart as GC, background threads or the machine.
 *
 * Engines are measured as the verifier runs them, bundled by esbuild (bench/_imaEngine.ts);
 * `--sources` imports their sources through tsx instead, where every read of an imported binding is
 * a getter call (an engine that reads its tables through imports looks much slower that way).
 *
 * Keylime is not installed on this machine and not measured here: its full-list rate is taken from
 * the issue's side-by-side run (attest's main at 2.5–3.2× Keylime's rate), so `ima_full_vs_keylime` =
 * 2.5 × (this engine's rate ÷ the baseline checkout's rate in this run), printed only when a baseline
 * is given, and only as true as the assumption that the baseline is the engine that run measured.
 */
import * as crypto from "node:crypto"
import { readFileSync } from "node:fs"
import { loadavg } from "node:os"
import { join } from "node:path"
import { performance } from "node:perf_hooks"
import { Either } from "effect"
import type { CompiledPolicy } from "../src/ima/policy.js"
import type { ImaState } from "../src/ima/state.js"
import type { verifyIma as VerifyIma } from "../src/ima/verify.js"
import { engineOf, sourcesOnly } from "./_imaEngine.js"
import { generate, type Generated, policyFor } from "./_imaGen.js"
import { type Call, OtherThreads, pauseText, pausesIn, spreadText } from "./_imaSpread.js"

const N = 100_000
const M = 1_000_000
// The machine is shared: CPU time of this process (user + system) is the one-core cost; wall time is printed beside it.
const cpuMs = () => {
  const u = process.cpuUsage()
  return (u.user + u.system) / 1000
}
const fmt = (x: number, d = 3) => x.toFixed(d)
const sorted = (xs: Array<number>) => [...xs].sort((a, b) => a - b)
const median = (xs: Array<number>) => sorted(xs)[Math.floor(xs.length / 2)]!
const pct = (xs: Array<number>, p: number) => sorted(xs)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!
const gc = (globalThis as { gc?: () => void }).gc ?? (() => {})
/**
 * Collect, then wait until the process is idle (its CPU time stops growing): process CPU time counts
 * the concurrent GC threads, so a phase would otherwise pay for the sweeping and marking left by the
 * one before it (the generators, the policy load, the full runs).
 */
const settle = async () => {
  gc()
  for (let i = 0; i < 100; i++) {
    const c0 = cpuMs()
    await new Promise((r) => setTimeout(r, 50))
    if (cpuMs() - c0 < 1) break
    if (i % 10 === 9) gc()
  }
}

const gcText = async (from: number, to: number): Promise<string> => pauseText(await pausesIn(from, to))
const load1 = () => loadavg().map((l) => l.toFixed(1)).join(" ")

/** `--baseline <checkout>`: another checkout's engine, run beside this one (its own policy compiler, its own modules). */
const baselineDir = (() => {
  const i = process.argv.indexOf("--baseline")
  return i >= 0 ? process.argv[i + 1] : undefined
})()
const self = await engineOf(join(import.meta.dirname, ".."))
const { verifyIma, loadRuntimePolicy, keyringFromPems, encodeEvaluationState, initialEvaluationState } = self
const other = baselineDir === undefined ? undefined : await engineOf(baselineDir)
type Verify = typeof VerifyIma

/** What the evaluation needs of a generated chunk; the generator's path and digest arrays are dropped (they are not an agent's). */
interface Chunk {
  readonly text: string
  readonly pcrs: Generated["pcrs"]
  readonly count: number
}
const chunk = (g: Generated): Chunk => ({ text: g.text, pcrs: g.pcrs, count: g.paths.length })

const load = (n: number, verificationKeys = "", loader = loadRuntimePolicy): CompiledPolicy =>
  Either.getOrThrow(loader(JSON.stringify({ ...policyFor(n, "sha256"), "verification-keys": verificationKeys }))).policy

// Signing keys for the keyed round: the tenant's keyring, the policy's verification-keys and keys
// learned from ima-buf entries in earlier rounds (two of each), as an agent with IMA appraisal has.
const pems = ["ima_cert.pem", "ima_ec_cert.pem"].map((f) => readFileSync(join(import.meta.dirname, "../../shared/vectors/tpm/ima", f), "utf8"))
const tenantKeyring = Either.getOrThrow(keyringFromPems(pems))
const policyKeys = JSON.stringify({ meta: { version: 1 }, keyids: [], pubkeys: pems })
const learnedKeys = pems.map((pem) => ({ keyring: ".ima", der: crypto.createPublicKey(pem).export({ format: "der", type: "spki" }).toString("base64") }))

console.log(`node ${process.version}; engines ${sourcesOnly ? "imported from their sources through tsx (--sources)" : "bundled by esbuild, as the verifier runs them"}; load average ${load1()}; generating ${N} ima-ng entries (sha256 template-hash column)…`)
let t = performance.now()
const gen = chunk(generate(0, N, "sha256"))
const more = { 10: chunk(generate(N, N + 10, "sha256", gen.pcrs)), 1000: chunk(generate(N, N + 1000, "sha256", gen.pcrs)) }
const policy = load(N + 1000)
console.log(`generated in ${fmt((performance.now() - t) / 1000, 2)} s; list ${(gen.text.length / 1e6).toFixed(1)} MB as one string`)

// Baseline: only the hashes a replay needs, template data pre-encoded.
const templateDatas = (text: string): Array<Buffer> => text.split("\n").filter((l) => l !== "").map((l) => {
  const parts = l.split(" ")
  const d = Buffer.concat([Buffer.from("sha256:\0"), Buffer.from(parts[3]!.slice(7), "hex")])
  const name = Buffer.from(parts[4]!)
  const b = Buffer.alloc(8 + d.length + name.length + 1)
  b.writeUInt32LE(d.length, 0)
  d.copy(b, 4)
  b.writeUInt32LE(name.length + 1, 4 + d.length)
  name.copy(b, 8 + d.length)
  return b
})
/**
 * Replays `ds` from `from` with only the two hashes per entry; returns PCR 10. The same one-shot
 * latin1 digests and reused extend buffer as the engine: a Buffer result per hash would allocate an
 * ArrayBuffer each, whose sweeping on V8's background threads then lands in the CPU time of the
 * engine call measured next (process CPU counts every thread).
 */
const replayOnly = (ds: ReadonlyArray<Buffer>, from: Buffer): Buffer => {
  let pcr = from.toString("latin1")
  const ext = Buffer.alloc(64)
  for (const d of ds) {
    ext.write(pcr, 0, 32, "latin1")
    ext.write(crypto.hash("sha256", d, "binary"), 32, 32, "latin1")
    pcr = crypto.hash("sha256", ext, "binary")
  }
  return Buffer.from(pcr, "latin1")
}
const datas = templateDatas(gen.text)
const hashLoop = (): number => {
  const t0 = cpuMs()
  const pcr = replayOnly(datas, Buffer.alloc(32))
  if (!pcr.equals(gen.pcrs.sha256)) throw new Error("baseline replay mismatch")
  return (cpuMs() - t0) / 1000
}
const baseRuns = Array.from({ length: 5 }, hashLoop)
const baseline = median(baseRuns)
datas.length = 0
console.log(`baseline hash loop (2×SHA-256/entry, crypto.hash to latin1): ${fmt(baseline)} s CPU`)

// (a) full evaluation; with --baseline, the other engine's run follows each (order alternating).
const otherPolicy = other === undefined ? undefined : load(N + 1000, "", other.loadRuntimePolicy)
await settle()
const fullRuns: Array<number> = []
const fullWall: Array<number> = []
const otherRuns: Array<number> = []
let stateAfter100k: ImaState | undefined
const fullRun = (engine: Verify, p: CompiledPolicy): { cpu: number; wall: number; state: ImaState } => {
  const w0 = performance.now()
  const t0 = cpuMs()
  const r = engine({ list: gen.text, startEntry: 0, policy: p, quotedPcr10: { sha256: gen.pcrs.sha256 } })
  const cpu = (cpuMs() - t0) / 1000
  if (r.failures.length !== 0 || r.matchedEntries !== N) throw new Error(`unexpected result: ${JSON.stringify(r.failures.slice(0, 2))}`)
  return { cpu, wall: (performance.now() - w0) / 1000, state: r.state }
}
const fullFrom = performance.now()
for (let i = 0; i < 9; i++) {
  if (other !== undefined && i % 2 === 1) otherRuns.push(fullRun(other.verifyIma, otherPolicy!).cpu)
  const r = fullRun(verifyIma, policy)
  fullRuns.push(r.cpu)
  fullWall.push(r.wall)
  stateAfter100k = r.state
  if (other !== undefined && i % 2 === 0) otherRuns.push(fullRun(other.verifyIma, otherPolicy!).cpu)
}
const fullGc = await gcText(fullFrom, performance.now())
const full = median(fullRuns)
console.log(`(a) full evaluation of ${N}: ${fmt(full)} s CPU median, p95 ${fmt(pct(fullRuns, 0.95))} (runs ${fullRuns.map((x) => fmt(x)).join(", ")}; wall ${fullWall.map((x) => fmt(x)).join(", ")}), ${Math.round(N / full)} entries/s; ${fullGc} over ${fullRuns.length + otherRuns.length} runs`)
console.log(`    hash-loop ratio (baseline / full): ${fmt(baseline / full, 2)}`)
const fullOther = otherRuns.length > 0 ? median(otherRuns) : undefined
if (fullOther !== undefined) {
  console.log(`    baseline engine (${baselineDir}): ${fmt(fullOther)} s CPU median (runs ${otherRuns.map((x) => fmt(x)).join(", ")}), ${Math.round(N / fullOther)} entries/s; speed-up ${fmt(fullOther / full, 2)}×`)
}

/**
 * Per-call cost of evaluating `g` (entries [from, from + k)) on `state`, many times: p50 and p95 of
 * CPU, median wall, the collections during the series; beside each call the hash-only replay of the
 * same entries (and the baseline engine's call, when given), so the spread of the machine shows too.
 */
const threads = new OtherThreads()
const incremental = async (
  label: string,
  g: Chunk,
  from: number,
  state: ImaState | undefined,
  p: CompiledPolicy,
  calls: number,
  keyring?: typeof tenantKeyring,
  otherP?: CompiledPolicy,
  /** Written over before each call: the caches hold none of the policy's rows, as when other agents ran in between. */
  evict?: Uint8Array
) => {
  await settle()
  threads.refresh()
  const series: Array<Call> = []
  const base: Array<number> = []
  const k = g.count
  const ds = templateDatas(g.text)
  const pcr0 = Buffer.from(state?.pcrs.sha256 ?? "", "hex")
  const call = (engine: Verify, pol: CompiledPolicy): string => {
    const r = engine({ list: g.text, startEntry: from, state, policy: pol, quotedPcr10: { sha256: g.pcrs.sha256 }, keyring })
    if (r.failures.length !== 0 || r.state.nextEntry !== from + k) throw new Error(`${label}: incremental round failed`)
    // the row the loop writes after the verdict
    return encodeEvaluationState({ ...initialEvaluationState, ima: r.state })
  }
  for (let i = 0; i < calls; i++) {
    evict?.fill(i & 0xff)
    const o0 = threads.ms()
    const w0 = performance.now()
    const t0 = cpuMs()
    call(verifyIma, p)
    const cpu = cpuMs() - t0
    const w1 = performance.now()
    const others = threads.ms() - o0
    const t1 = cpuMs()
    if (!replayOnly(ds, pcr0).equals(g.pcrs.sha256)) throw new Error(`${label}: hash-only replay mismatch`)
    series.push({ cpu, others, wall: w1 - w0, from: w0, to: w1, replay: cpuMs() - t1 })
    if (other !== undefined && otherP !== undefined) {
      const t2 = cpuMs()
      call(other.verifyIma, otherP)
      base.push(cpuMs() - t2)
    }
  }
  const cpu = series.map((c) => c.cpu)
  const ref = series.map((c) => c.replay)
  const ratio = series.map((c) => c.cpu / Math.max(c.replay, 0.001))
  const spread = await spreadText(series)
  console.log(
    `${label} +${k} entries: ${fmt(median(cpu))} ms CPU p50, p95 ${fmt(pct(cpu, 0.95))} ms (wall p50 ${fmt(median(series.map((c) => c.wall)))} ms; ${calls} calls; load average ${load1()})`
  )
  console.log(`    ${spread.text}`)
  console.log(`    hash-only replay of the same entries beside each call: p50 ${fmt(median(ref))}, p95 ${fmt(pct(ref, 0.95))} ms; call ÷ replay p50 ${fmt(median(ratio), 2)}, p95 ${fmt(pct(ratio, 0.95), 2)}`)
  if (base.length > 0) console.log(`    baseline engine: p50 ${fmt(median(base))}, p95 ${fmt(pct(base, 0.95))} ms; speed-up ${fmt(median(base) / median(cpu), 2)}×`)
  return { p50: median(cpu), p95: pct(cpu, 0.95), main95: spread.main95, base: base.length > 0 ? median(base) : undefined }
}

// (b) incremental on the 100k state (each series starts from a settled heap, see `settle`)
const keyedPolicy = load(N + 1000, policyKeys)
const keyedState = { ...stateAfter100k!, learnedKeys }
const inc10 = await incremental("(b) 100k state,", more[10], N, stateAfter100k, policy, 1000, undefined, otherPolicy)
const inc1k = await incremental("(b) 100k state,", more[1000], N, stateAfter100k, policy, 200, undefined, otherPolicy)
const inc10keys = await incremental("(b) 100k state with 2 tenant, 2 policy and 2 learned keys,", more[10], N, keyedState, keyedPolicy, 400, tenantKeyring)

// (e) the same +1,000 with the caches emptied before each call (64 MB written over): in a verifier
// other agents' rounds run between two of one agent's, so its policy rows are rarely cached; this is
// where a bigger policy costs more per entry.
const evict = new Uint8Array(64 << 20)
const cold1k = await incremental("(e) 100k state, caches emptied before each call,", more[1000], N, stateAfter100k, policy, 100, undefined, undefined, evict)

// (c) 1,000,000 entries: ten 100k rounds (the same work as one list), generated first.
t = performance.now()
const rounds: Array<Chunk> = []
let pcrs: Generated["pcrs"] | undefined
for (let from = 0; from < M; from += N) {
  const g = chunk(generate(from, from + N, "sha256", pcrs))
  pcrs = g.pcrs
  rounds.push(g)
}
const moreM = { 10: chunk(generate(M, M + 10, "sha256", pcrs)), 1000: chunk(generate(M, M + 1000, "sha256", pcrs)) }
const policyM = load(M + 1000)
console.log(`generated 1,000,000 entries and loaded a policy of ${M + 1000} names in ${fmt((performance.now() - t) / 1000, 1)} s`)
await settle()
let state: ImaState | undefined
let evalTime = 0
const perRound: Array<number> = []
for (const [k, g] of rounds.entries()) {
  const t0 = cpuMs()
  const r = verifyIma({ list: g.text, startEntry: k * N, state, policy: policyM, quotedPcr10: { sha256: g.pcrs.sha256 } })
  const dt = (cpuMs() - t0) / 1000
  evalTime += dt
  perRound.push(dt)
  if (r.failures.length !== 0) throw new Error(`round at ${k * N} failed: ${JSON.stringify(r.failures.slice(0, 2))}`)
  state = r.state
}
console.log(`(c) ${M} entries: ${fmt(evalTime)} s CPU (rounds ${perRound.map((x) => fmt(x, 2)).join(" ")}); ${fmt(evalTime / full, 2)}× the 100k time for 10× the entries`)

// (d) incremental on the 1M state
const inc10m = await incremental("(d) 1M state,", moreM[10], M, state, policyM, 1000)
const inc1km = await incremental("(d) 1M state,", moreM[1000], M, state, policyM, 200)
const cold1km = await incremental("(e) 1M state, caches emptied before each call,", moreM[1000], M, state, policyM, 100, undefined, undefined, evict)

console.log(`BENCH ima_full_100k_s ${fmt(full)} s`)
console.log(`BENCH ima_full_100k_entries_per_s ${Math.round(N / full)}`)
if (fullOther !== undefined) {
  console.log(`BENCH ima_full_100k_speedup_vs_baseline ${fmt(fullOther / full, 2)}`)
  // The side-by-side run: main at 2.5–3.2× Keylime; the low end is the conservative figure.
  console.log(
    `BENCH ima_full_vs_keylime ${fmt((2.5 * fullOther) / full, 2)} (derived, not measured: Keylime is not installed here; 2.5–3.2 × this run's speed-up over ${baselineDir}, so ${fmt((2.5 * fullOther) / full, 2)}–${fmt((3.2 * fullOther) / full, 2)} if that checkout is the engine issue 25 ran beside Keylime)`
  )
}
console.log(`BENCH ima_incremental_10_ms ${fmt(inc10.p50)} ms`)
console.log(`BENCH ima_incremental_10_ms_p95 ${fmt(inc10.p95)} ms`)
console.log(`BENCH ima_incremental_10_ms_with_keys ${fmt(inc10keys.p50)} ms`)
console.log(`BENCH ima_incremental_1000_ms ${fmt(inc1k.p50, 2)} ms`)
console.log(`BENCH ima_incremental_1000_ms_p95 ${fmt(inc1k.p95, 2)} ms`)
console.log(`BENCH ima_incremental_1000_ms_p95_main_thread ${fmt(inc1k.main95, 2)} ms`)
if (inc1k.base !== undefined) console.log(`BENCH ima_incremental_1000_speedup_vs_baseline ${fmt(inc1k.base / inc1k.p50, 2)}`)
if (inc10.base !== undefined) console.log(`BENCH ima_incremental_10_speedup_vs_baseline ${fmt(inc10.base / inc10.p50, 2)}`)
console.log(`BENCH ima_full_1m_s ${fmt(evalTime)} s`)
console.log(`BENCH ima_full_1m_ratio_to_100k ${fmt(evalTime / full, 2)}`)
console.log(`BENCH ima_incremental_10_ms_1m ${fmt(inc10m.p50)} ms`)
console.log(`BENCH ima_incremental_1000_ms_1m ${fmt(inc1km.p50, 2)} ms`)
console.log(`BENCH ima_incremental_1000_ms_1m_p95 ${fmt(inc1km.p95, 2)} ms`)
console.log(`BENCH ima_incremental_1000_ms_cold ${fmt(cold1k.p50, 2)} ms`)
console.log(`BENCH ima_incremental_1000_ms_1m_cold ${fmt(cold1km.p50, 2)} ms`)
console.log(`BENCH ima_hash_loop_ratio ${fmt(baseline / full, 2)}`)
console.log(`BENCH ima_load_average ${load1()}`)
