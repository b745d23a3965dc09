/**
 * Runtime-policy loading, from upload text to a compiled policy (`loadRuntimePolicy`: checksum, scan,
 * structure, tables), for policies of 100,000 and 1,000,000 digests. Baseline in the same run:
 * `JSON.parse` of the same text. Figures: CPU time of this process (the machine is shared; wall time
 * is printed beside it), the heap the compiled policy retains (heapUsed + external after GC, text
 * excluded), the CPU of a full GC while it is alive (what every major GC of a verifier holding it
 * pays), and the peak RSS of a fresh process that reads the file and loads it. For comparison, the
 * previous path at 100k: JSON.parse, a Schema decode of every digest, then the compile.
 *
 * Through the API (bench/_policyUpload.ts): the 100k-digest policy (~10.6 MB) uploaded to `attest
 * verifier` by `POST /v2.6/allowlists/:name` and `POST /v3.0/policies/ima`, the verifier's process CPU
 * per upload (median of 5) beside `loadRuntimePolicy` of the same text here (the rounds above;
 * `policy_upload_ratio`, median against median), on SQLite and,
 * when reachable, PostgreSQL. `npm run bench -- policy-load upload` runs only that part.
 *
 * Needs --expose-gc (scripts/bench.mjs passes it).
 */
import { execFileSync } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { performance } from "node:perf_hooks"
import { Effect, Either } from "effect"
import { decodeRuntimePolicyJson } from "../schemas/RuntimePolicy.js"
import { loadRuntimePolicy } from "../src/ima/load.js"
import { compilePolicy } from "../src/ima/policy.js"
import { postgresAvailable } from "../test/support/requirements.js"
import { policyFor } from "./_imaGen.js"
import { measureUploads } from "./_policyUpload.js"

const gc = (globalThis as { gc?: () => void }).gc
if (gc === undefined) throw new Error("run with --expose-gc (npm run bench -- policy-load)")

const cpuMs = () => {
  const u = process.cpuUsage()
  return (u.user + u.system) / 1000
}
const MiB = 1024 * 1024
const fmt = (x: number, d = 1) => x.toFixed(d)

/** Several collections with pauses: ArrayBuffers and external strings are freed by later tasks. */
const settledHeap = async (): Promise<number> => {
  for (let i = 0; i < 3; i++) {
    gc()
    await new Promise((r) => setTimeout(r, 20))
  }
  const m = process.memoryUsage()
  return m.heapUsed + m.external
}

const timed = <A>(f: () => A): { value: A; cpu: number; wall: number } => {
  const w = performance.now()
  const c = cpuMs()
  const value = f()
  return { value, cpu: cpuMs() - c, wall: performance.now() - w }
}

// A child mode: read the file, then load it (or JSON.parse it); print the peak RSS before and after.
if (process.argv[2] === "--child") {
  const text = readFileSync(process.argv[3]!, "utf8")
  const before = process.resourceUsage().maxRSS
  const keep = process.argv[4] === "load" ? Either.getOrThrow(loadRuntimePolicy(text)) : JSON.parse(text)
  if (keep === undefined) throw new Error("nothing loaded")
  console.log(`${before} ${process.resourceUsage().maxRSS}`)
  process.exit(0)
}

interface Figures {
  readonly size: number
  readonly parse: Array<number>
  readonly load: Array<number>
  readonly wall: Array<number>
  readonly retained: number
  readonly parseRetained: number
  /** CPU of a full GC (gc()) with the compiled policy alive, and with nothing loaded. */
  readonly gcWith: number
  readonly gcWithout: number
  readonly peak: { readonly parse: { readonly read: number; readonly peak: number }; readonly load: { readonly read: number; readonly peak: number } }
}

const dir = mkdtempSync(join(tmpdir(), "attest-policy-load-"))

/** Peak RSS (MiB) of a fresh process after it has read the file, and after it has also parsed or loaded it. */
const peakRss = (file: string, mode: "parse" | "load"): { readonly read: number; readonly peak: number } => {
  const out = execFileSync(process.execPath, [...process.execArgv, process.argv[1]!, "--child", file, mode], { encoding: "utf8" })
  const [read, peak] = out.trim().split(" ").map(Number)
  return { read: (read! * 1024) / MiB, peak: (peak! * 1024) / MiB }
}

const measure = async (n: number, rounds: number): Promise<Figures> => {
  const text = JSON.stringify(policyFor(n, "sha256"))
  const file = join(dir, `policy-${n}.json`)
  writeFileSync(file, text)
  const parse: Array<number> = []
  const load: Array<number> = []
  const wall: Array<number> = []
  let retained = 0
  let parseRetained = 0
  let gcWith = Infinity
  let gcWithout = Infinity
  const gcCpu = () => timed(() => gc()).cpu
  for (let i = 0; i < rounds; i++) {
    let base = await settledHeap()
    let parsed: { value: unknown; cpu: number } | undefined = timed((): unknown => JSON.parse(text))
    parse.push(parsed.cpu)
    parseRetained = (await settledHeap()) - base
    parsed = undefined
    base = await settledHeap()
    let loaded: { value: ReturnType<typeof loadRuntimePolicy>; cpu: number; wall: number } | undefined = timed(() => loadRuntimePolicy(text))
    if (Either.isLeft(loaded.value)) throw new Error(loaded.value.left.message)
    load.push(loaded.cpu)
    wall.push(loaded.wall)
    retained = (await settledHeap()) - base
    gcWith = Math.min(gcWith, gcCpu())
    loaded = undefined
    await settledHeap()
    gcWithout = Math.min(gcWithout, gcCpu())
  }
  const peak = { parse: peakRss(file, "parse"), load: peakRss(file, "load") }
  return { size: text.length, parse, load, wall, retained, parseRetained, gcWith, gcWithout, peak }
}

const report = (label: string, f: Figures) => {
  const best = Math.min(...f.load)
  const bestParse = Math.min(...f.parse)
  console.log(`${label}: JSON ${fmt(f.size / 1e6)} MB`)
  console.log(`  JSON.parse      ${f.parse.map((x) => fmt(x, 0)).join(", ")} ms CPU (best ${fmt(bestParse, 0)})`)
  console.log(`  loadRuntimePolicy ${f.load.map((x) => fmt(x, 0)).join(", ")} ms CPU (best ${fmt(best, 0)}; wall ${f.wall.map((x) => fmt(x, 0)).join(", ")})`)
  console.log(`  ratio to JSON.parse: best ${fmt(best / bestParse, 2)}, spread ${fmt(Math.min(...f.load.map((x, i) => x / f.parse[i]!)), 2)}–${fmt(Math.max(...f.load.map((x, i) => x / f.parse[i]!)), 2)}`)
  console.log(`  retained heap: compiled ${fmt(f.retained / MiB)} MiB (${fmt(f.retained / f.size, 2)}× the JSON); the JSON.parse object ${fmt(f.parseRetained / MiB)} MiB`)
  console.log(`  a full GC with the compiled policy alive: ${fmt(f.gcWith)} ms CPU (${fmt(f.gcWithout)} ms with nothing loaded)`)
  const rss = (p: { read: number; peak: number }) => `${fmt(p.peak, 0)} MiB (+${fmt(p.peak - p.read, 0)})`
  console.log(`  peak RSS of a process that reads the file (${fmt(f.peak.load.read, 0)} MiB) and then: JSON.parse ${rss(f.peak.parse)}, loadRuntimePolicy ${rss(f.peak.load)}`)
  return { best, ratio: best / bestParse, heap: f.retained / f.size, gc: f.gcWith }
}

const uploadOnly = process.argv[2] === "upload"
console.log(`node ${process.version}; CPU time of this process, best of 3 (the machine may be shared with other work)`)
const k100Figures = await measure(100_000, 3)
const k100 = report("100,000 digests", k100Figures)
if (!uploadOnly) {
  // The previous path, for comparison: a Schema decode of the whole document, then the compile.
  {
    const text = JSON.stringify(policyFor(100_000, "sha256"))
    const runs: Array<number> = []
    for (let i = 0; i < 2; i++) {
      await settledHeap()
      runs.push(timed(() => Either.getOrThrow(compilePolicy(Either.getOrThrow(decodeRuntimePolicyJson(text))))).cpu)
    }
    console.log(`  (the Schema-decode path at 100k: ${runs.map((x) => fmt(x, 0)).join(", ")} ms CPU)`)
  }
}
const m1 = uploadOnly ? undefined : report("1,000,000 digests", await measure(1_000_000, 3))
rmSync(dir, { recursive: true, force: true })

// Through the API: the verifier's CPU per upload of the same 100k policy, beside the in-process load.
const uploadText = JSON.stringify(policyFor(100_000, "sha256"))
// median against median: the uploads below are the median of 5
const loadS = [...k100Figures.load].sort((a, b) => a - b)[1]! / 1000
console.log(`in-process load of the same text (loadRuntimePolicy), median of 3: ${fmt(loadS, 3)} s CPU`)
const backends: Array<"sqlite" | "pg"> = (await postgresAvailable()) ? ["sqlite", "pg"] : ["sqlite"]
const uploads: Array<{ backend: string; v2: number; v3: number }> = []
for (const backend of backends) {
  const f = await Effect.runPromise(measureUploads(backend, uploadText, 5))
  // the median: /proc counts in 10 ms ticks and the GC threads finish a request's work at their own pace
  const mid = (xs: Array<number>) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!
  const v2 = mid(f.v2)
  const v3 = mid(f.v3)
  uploads.push({ backend, v2, v3 })
  console.log(`upload of ${fmt(uploadText.length / 1e6)} MB through the API (${backend}), verifier CPU: v2 POST /allowlists ${f.v2.map((x) => fmt(x, 3)).join(", ")} s (median ${fmt(v2, 3)}, ${fmt(v2 / loadS, 2)}× the in-process load); v3 POST /policies/ima ${f.v3.map((x) => fmt(x, 3)).join(", ")} s (median ${fmt(v3, 3)}, ${fmt(v3 / loadS, 2)}×)`)
}
if (!backends.includes("pg")) console.log("PostgreSQL not reachable: upload measured on SQLite only")

console.log(`BENCH policy_load_100k_ms ${fmt(k100.best, 0)} ms`)
console.log(`BENCH policy_load_cpu_s ${fmt(loadS, 3)} s`)
for (const u of uploads) {
  const suffix = u.backend === "sqlite" ? "" : `_${u.backend}`
  console.log(`BENCH policy_upload_cpu_s${suffix} ${fmt(u.v2, 3)} s`)
  console.log(`BENCH policy_upload_ratio${suffix} ${fmt(u.v2 / loadS, 2)}`)
  console.log(`BENCH policy_upload_v3_cpu_s${suffix} ${fmt(u.v3, 3)} s`)
  console.log(`BENCH policy_upload_v3_ratio${suffix} ${fmt(u.v3 / loadS, 2)}`)
}
if (m1 !== undefined) {
  console.log(`BENCH policy_load_ratio_to_json_parse ${fmt(k100.ratio, 2)}`)
  console.log(`BENCH policy_heap_ratio_to_json_size ${fmt(k100.heap, 2)}`)
  console.log(`BENCH policy_load_1m_ms ${fmt(m1.best, 0)} ms`)
  console.log(`BENCH policy_load_ratio_to_json_parse_1m ${fmt(m1.ratio, 2)}`)
  console.log(`BENCH policy_heap_ratio_to_json_size_1m ${fmt(m1.heap, 2)}`)
  console.log(`BENCH policy_full_gc_ms_1m ${fmt(m1.gc)} ms`)
}
