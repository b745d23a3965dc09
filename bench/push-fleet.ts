/**
 * A fleet of push agents against one verifier: `attest verifier` runs as its own process (SQLite,
 * generated CA, quote_interval = 2 s, push mode); the N push agents run in processes of their own
 * (bench/_pushFleet.ts, up to BENCH_PUSH_PER_PROC = 200 agents each, each agent with its own
 * simulated TPM and machine), enrolled over v2 with a runtime policy of its IMA list.
 * Figures: attestations/s, the verifier's CPU per attestation (from /proc: session, phase 1,
 * phase 2 and the background verdict), agents on schedule (their verdict count over the window,
 * read from the verifier's SQLite file so counting costs it nothing), evidence-to-verdict latency
 * p50/p99 (the verifier's own evidence_received_at → verification_completed_at), the verifier's
 * memory per agent (RSS growth over the run / N). Baseline in the same run: the evaluator alone in
 * this process on one agent's first evidence. The pull figure (bench/_pullPhase.ts): a pull-mode
 * verifier with N pull agents (bench/_fleet.ts, a process of its own) runs beside the push fleet,
 * and both verifiers' CPU is read over the same window, so the machine's load moves both alike
 * (BENCH_PULL=0 leaves it out).
 *
 *   npm run bench -- push-fleet [agents] [seconds]
 *   npm run bench -- push-fleet capacity [start] [step] [seconds]
 *
 * capacity: no pull side; the fleet grows by `step` agents (a new process each time) from `start`
 * until agents fall off schedule (< 95% on schedule), the verifier uses ≥ 95% of a core, or
 * BENCH_MAX agents (2,000). Each size settles (BENCH_SETTLE_S, 30 s here) and is measured over
 * `seconds`. The answer is the largest fleet kept on schedule and the verifier's CPU% there; the
 * load generators' CPU is printed too (on this shared machine they, not the verifier, may be what
 * runs out).
 * BENCH_PUSH_VERIFIER=<attest.js>: the push verifier from another build (a before/after pair in one
 * checkout: copy dist/ aside before the change).
 */
import { Duration, Effect, Layer, Logger, LogLevel, Option, Schedule } from "effect"
import { spawn } from "node:child_process"
import { createRequire } from "node:module"
import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { TpmSimulator } from "../src/tpm/simulator/TpmSimulator.js"
import { MeasurementSource } from "../src/agent/measurements/MeasurementSource.js"
import { establishTpmIdentity } from "../src/agent/tpmIdentity.js"
import * as SimulatedMachine from "../src/agent/measurements/SimulatedMachine.js"
import { rawRequest } from "../src/http/client.js"
import { CA_FILES } from "../src/pki/layout.js"
import { Tpm } from "../src/tpm/Tpm.js"
import { policyOfMachine } from "../test/push/support.js"
import { pushAgentId } from "./_pushFleet.js"
import { inProcessEvaluationMs } from "./_pushBaseline.js"
import { attestCommand } from "./_verifierCommand.js"
import { cpuMs, sysMs, threadCpuMs, threadSplit } from "./_procCpu.js"
import { childUntil, startPull } from "./_pullPhase.js"

const CAPACITY = process.argv[2] === "capacity"
const AGENTS = CAPACITY ? Number(process.argv[3] ?? 200) : Number(process.argv[2] ?? 20)
const STEP = CAPACITY ? Number(process.argv[4] ?? 200) : 0
const SECONDS = Number(process.argv[CAPACITY ? 5 : 3] ?? 30)
const MAX_AGENTS = Number(process.env["BENCH_MAX"] ?? 2000)
const PER_PROC = Number(process.env["BENCH_PUSH_PER_PROC"] ?? 200)
/**
 * On schedule: a verdict at least every 2.5 s over the window. A push agent sleeps
 * seconds_to_next_attestation (quote_interval, 2 s) after each accepted evidence, as Keylime's
 * does, so its period is 2 s plus its own cycle (two exchanges and a quote); 0.5 s of that is allowed.
 */
const ON_SCHEDULE_PERIOD_S = 2.5
/**
 * Seconds of steady attestation before the measured window (both sides; BENCH_SETTLE_S). V8 is
 * still optimizing the attestation path a minute in (its compiler threads then cost a push
 * attestation twice what they do after two), and a verifier runs for days.
 */
const SETTLE_SECONDS = Number(process.env["BENCH_SETTLE_S"] ?? (CAPACITY ? 30 : 120))

const percentile = (sorted: ReadonlyArray<number>, p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN
const rssKb = (pid: number): number => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1])
/** Client ports of established TCP connections to `port` on this host (/proc/net/tcp{,6}). */
const clientPortsOf = (port: number): Set<number> => {
  const out = new Set<number>()
  for (const f of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let text = ""
    try {
      text = readFileSync(f, "utf8")
    } catch {
      continue
    }
    for (const line of text.split("\n").slice(1)) {
      const cols = line.trim().split(/\s+/)
      if (cols.length < 4 || cols[3] !== "01") continue
      const local = parseInt(cols[1]!.split(":")[1]!, 16)
      if (local === port) out.add(parseInt(cols[2]!.split(":")[1]!, 16))
    }
  }
  return out
}
const load = () => loadavg().map((l) => l.toFixed(2)).join(" ")

// better-sqlite3 (under @effect/sql-sqlite-node) has no types here: the calls used
interface ReadOnlyDb {
  prepare(sql: string): { all(...params: Array<unknown>): Array<unknown> }
  close(): void
}
const Database = createRequire(import.meta.url)("better-sqlite3") as new (file: string, options: object) => ReadOnlyDb

const main = Effect.gen(function*() {
  const dir = mkdtempSync(join(tmpdir(), "attest-bench-push-"))
  yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
  console.log(`load average at the start: ${load()}`)
  const caDir = join(dir, "cv_ca")
  const config = join(dir, "attest.toml")
  const dataDir = join(dir, "data")
  writeFileSync(config, ["[verifier]", "port = 0", `tls_dir = "generate"`, `ca_dir = "${caDir}"`, `data_dir = "${dataDir}"`, "metrics_port = 0", `log_level = "warning"`, "quote_interval = 2", `mode = "push"`, `policy_cache_size = ${CAPACITY ? MAX_AGENTS : AGENTS}`, ""].join("\n"))
  // push mode: a push deployment's verifier runs no pull loop (in pull mode the loop would poll the
  // v2-enrolled agents at their contact port). Every agent has its own runtime policy here: the
  // cache holds them all, as the pull bench's one shared policy stays compiled.
  // BENCH_PROF_DIR=<dir>: a CPU profile of the verifier process (written when it exits); the fleet's
  // window is printed in the profile's clock (monotonic µs) for bench/_profileSummary.ts
  const prof = process.env["BENCH_PROF_DIR"]
  const perfOut = process.env["BENCH_PERF"]
  const child = spawn(process.execPath, [...(prof === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${prof}`]), ...(perfOut === undefined ? [] : ["--perf-basic-prof"]), ...(process.env["BENCH_VERIFIER_FLAGS"]?.split(" ").filter((f) => f !== "") ?? []), ...(process.env["BENCH_PUSH_VERIFIER"] === undefined ? attestCommand(["verifier", "--config", config]) : [process.env["BENCH_PUSH_VERIFIER"], "verifier", "--config", config])], {
    stdio: ["ignore", "pipe", "inherit"]
  })
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()))
  yield* Effect.addFinalizer(() => Effect.promise(() => Promise.race([exited, new Promise<void>((r) => setTimeout(r, 10_000))])))
  yield* Effect.addFinalizer(() => Effect.sync(() => child.kill("SIGINT")))
  const monotonicUs = () => Number(process.hrtime.bigint() / 1000n)
  const url = yield* Effect.async<string>((resume) => {
    let out = ""
    const copy = process.env["BENCH_VERIFIER_OUT"]
    child.stdout.on("data", (d: Buffer) => {
      if (copy !== undefined) appendFileSync(copy, d)
      if (out.length > 1_000_000) return
      out += d.toString()
      const m = /attest verifier: API \(HTTPS, mTLS admin\) on (https:\/\/\S+)/.exec(out)
      if (m) resume(Effect.succeed(m[1]!))
    })
    child.once("exit", (code) => resume(Effect.dieMessage(`attest verifier exited (${code}): ${out}`)))
  })
  const pid = child.pid!
  const ca = readFileSync(join(caDir, CA_FILES.caCert), "utf8")
  const admin = { ca, cert: readFileSync(join(caDir, CA_FILES.clientCert), "utf8"), key: readFileSync(join(caDir, CA_FILES.clientKey), "utf8") }
  const db = new Database(join(dataDir, "verifier.sqlite"), { readonly: true, fileMustExist: true })
  yield* Effect.addFinalizer(() => Effect.sync(() => db.close()))
  /** Each push agent's verdict count (push_agents.attestation_count). */
  const counts = () => new Map((db.prepare("SELECT agent_id, attestation_count FROM push_agents").all() as Array<{ agent_id: string; attestation_count: number }>).map((r) => [r.agent_id, Number(r.attestation_count)]))

  // the baseline: the evaluator alone on one agent's first evidence (an agent of this process, not enrolled)
  const inProcessMs = yield* Effect.gen(function*() {
    const ctx = yield* Layer.build(SimulatedMachine.layer({ name: "baseline" }).pipe(Layer.provideMerge(TpmSimulator.layer({}))))
    const tpm = ctx.unsafeMap.get(Tpm.key) as Tpm["Type"]
    const source = ctx.unsafeMap.get(MeasurementSource.key) as MeasurementSource["Type"]
    const { ak } = yield* establishTpmIdentity({ agentId: pushAgentId(999_999), dataDir: join(dir, "baseline"), ekAlg: "rsa", ak: { alg: "rsa", bits: 2048, hash: "sha256", scheme: "rsassa" } }).pipe(Effect.provide(ctx))
    const list = Option.getOrThrow(yield* Effect.orDie(source.imaList(0))).list
    return yield* inProcessEvaluationMs({ tpm, ak, source, policy: policyOfMachine(list) })
  })

  // the verifier's own idle cost (timers, sweeps), part of every figure below
  const idle0 = cpuMs(pid)
  yield* Effect.sleep("3 seconds")
  const idleMsPerS = (cpuMs(pid) - idle0) / 3
  const rssBefore = rssKb(pid)
  // the verifier's peak RSS from here to the end, sampled twice a second (one reading is GC noise)
  let rssPeak = rssBefore
  yield* Effect.forkScoped(Effect.repeat(Effect.sync(() => {
    rssPeak = Math.max(rssPeak, rssKb(pid))
  }), Schedule.spaced("500 millis")))

  // the pull side (BENCH_PULL=0 leaves it out): a pull-mode verifier and its N agents, running
  // beside the push fleet so that both verifiers are measured over the same window
  const pull = CAPACITY || process.env["BENCH_PULL"] === "0" ? undefined : yield* startPull({ agents: AGENTS, dir, caDir })

  // the push fleet: processes of at most PER_PROC agents, each enrolling its own (by v2, as an admin)
  const fleetPids: Array<number> = []
  const addAgents = (first: number, n: number) =>
    Effect.forEach(Array.from({ length: Math.ceil(n / PER_PROC) }, (_, k) => k), (k) =>
      Effect.gen(function*() {
        const from = first + k * PER_PROC
        const count = Math.min(PER_PROC, first + n - from)
        const p = yield* childUntil(["--import", "tsx", "bench/_pushFleet.ts", String(count), url, caDir, "2", join(dir, `push-${from}`), String(from)], (out) => {
          const m = /\{"ready":(\d+)\}\n/.exec(out)
          return m === null ? undefined : Number(m[1])
        })
        fleetPids.push(p.pid)
        if (p.value < count) console.log(`push fleet process ${p.pid}: ${p.value}/${count} agents attesting`)
      }), { concurrency: "unbounded", discard: true })

  /** The push side's figures over one window of SECONDS (after `settle` seconds). */
  const measure = (agents: number, settle: number) =>
    Effect.gen(function*() {
      // warm-up: every agent has its session and has sent its whole IMA list once (two verdicts); at most 120 s
      const warm = performance.now()
      while ([...counts().values()].filter((c) => c >= 2).length < agents && performance.now() - warm < 120_000) yield* Effect.sleep("500 millis")
      if (pull !== undefined) yield* pull.warm
      // then a steady state: the JIT done optimizing the attestation path, as on a verifier running for days
      yield* Effect.sleep(Duration.seconds(settle))
      const warmSeconds = (performance.now() - warm) / 1000
      const pullBefore = pull?.begin()
      const countsBefore = counts()
      const cpuBefore = cpuMs(pid)
      const sysBefore = sysMs(pid)
      const fleetBefore = fleetPids.reduce((t, p) => t + cpuMs(p), 0)
      const threadsBefore = threadCpuMs(pid)
      // BENCH_PERF=<file>: `perf record` of the verifier over the window (on-CPU samples only)
      const perf = perfOut === undefined ? undefined : spawn("perf", ["record", "-F", "997", "-g", "-p", String(pid), "-o", perfOut], { stdio: "ignore" })
      const start = performance.now()
      const startMs = Date.now()
      const windowStartUs = monotonicUs()
      const verifierPort = Number(new URL(url).port)
      const portsBefore = clientPortsOf(verifierPort)
      yield* Effect.sleep(Duration.seconds(SECONDS))
      const windowEndUs = monotonicUs()
      const cpu = cpuMs(pid) - cpuBefore
      const sys = sysMs(pid) - sysBefore
      const fleetCpu = fleetPids.reduce((t, p) => t + cpuMs(p), 0) - fleetBefore
      const threadsAfter = threadCpuMs(pid)
      const countsAfter = counts()
      const pullFigure = pull === undefined || pullBefore === undefined ? undefined : pull.end(pullBefore)
      if (perf !== undefined) {
        perf.kill("SIGINT")
        yield* Effect.promise(() => new Promise((resolve) => perf.once("exit", resolve)))
      }
      const seconds = (performance.now() - start) / 1000
      let inWindow = 0
      let onSchedule = 0
      for (const [id, c] of countsAfter) {
        const d = c - (countsBefore.get(id) ?? 0)
        inWindow += d
        if (d >= Math.floor(seconds / ON_SCHEDULE_PERIOD_S)) onSchedule++
      }
      const portsAfter = clientPortsOf(verifierPort)
      // kept-alive connections: the same client ports at both ends of the window mean no new TLS handshakes
      const kept = [...portsBefore].filter((p) => portsAfter.has(p)).length
      const rows = db.prepare("SELECT evaluation, evidence_received_at AS e, verification_completed_at AS v FROM push_attestations WHERE stage = 'verification_complete' AND evidence_received_at >= ? AND evidence_received_at < ?").all(startMs, startMs + seconds * 1000) as Array<{ evaluation: string; e: number; v: number }>
      const latencies = rows.map((r) => Number(r.v) - Number(r.e)).sort((a, b) => a - b)
      return {
        agents,
        warmSeconds,
        seconds,
        inWindow,
        onSchedule,
        perAttestation: cpu / Math.max(1, inWindow),
        cpuPercent: (cpu / (seconds * 1000)) * 100,
        fleetCpuPercent: (fleetCpu / (seconds * 1000)) * 100,
        sysPerAttestation: sys / Math.max(1, inWindow),
        threads: threadSplit(threadsBefore, threadsAfter, inWindow),
        p50: percentile(latencies, 50),
        p99: percentile(latencies, 99),
        passed: rows.filter((r) => r.evaluation === "pass").length,
        verified: rows.length,
        connections: `${portsBefore.size} at the window's start, ${portsAfter.size} at its end, ${kept} the same (kept alive)`,
        window: `${windowStartUs} ${windowEndUs}`,
        pullFigure
      }
    })

  if (CAPACITY) {
    let best: { agents: number; cpuPercent: number; perAttestation: number } | undefined
    for (let n = AGENTS; n <= MAX_AGENTS; n += STEP) {
      yield* addAgents(n === AGENTS ? 0 : n - STEP, n === AGENTS ? AGENTS : STEP)
      const m = yield* measure(n, SETTLE_SECONDS)
      console.log(`${n} push agents: ${m.onSchedule}/${n} on schedule (mean period ${((m.seconds * n) / Math.max(1, m.inWindow)).toFixed(2)} s), ${(m.inWindow / m.seconds).toFixed(1)} attestations/s, verifier ${m.cpuPercent.toFixed(0)}% of a core (${m.perAttestation.toFixed(2)} ms per attestation), load generators ${m.fleetCpuPercent.toFixed(0)}%, verdict p50 ${m.p50} ms p99 ${m.p99} ms; load average ${load()}`)
      if (m.onSchedule < 0.95 * n) break
      best = { agents: n, cpuPercent: m.cpuPercent, perAttestation: m.perAttestation }
      if (m.cpuPercent >= 95) break
    }
    if (best === undefined) return console.log(`no fleet size from ${AGENTS} stayed on schedule`)
    console.log(`largest fleet on schedule: ${best.agents} push agents, the verifier at ${best.cpuPercent.toFixed(0)}% of one core; at that CPU per agent one core would keep ${(best.agents / (best.cpuPercent / 100)).toFixed(0)}`)
    console.log(`BENCH push_agents_on_schedule ${best.agents}`)
    console.log(`BENCH push_verifier_cpu_percent ${best.cpuPercent.toFixed(0)} %`)
    console.log(`BENCH push_agents_per_core ${(best.agents / (best.cpuPercent / 100)).toFixed(0)}`)
    return
  }

  yield* addAgents(0, AGENTS)
  const m = yield* measure(AGENTS, SETTLE_SECONDS)
  const rssAfter = Math.max(rssPeak, rssKb(pid))

  // BENCH_PROBE=1: the verifier's CPU per request of a few kinds, one kept-alive connection (where the fixed costs are)
  if (process.env["BENCH_PROBE"] === "1") {
    const https = yield* Effect.promise(() => import("node:https"))
    const keep = new https.Agent({ keepAlive: true, maxSockets: 1 })
    const probe = (label: string, method: string, path: string, headers: Record<string, string> = {}, body?: string) =>
      Effect.gen(function*() {
        const n = 1000
        for (let i = 0; i < 50; i++) yield* rawRequest({ method, baseUrl: url, path, tls: admin, agent: keep, headers, ...(body === undefined ? {} : { body }) }).pipe(Effect.orDie)
        const c0 = cpuMs(pid)
        const t0 = monotonicUs()
        for (let i = 0; i < n; i++) yield* rawRequest({ method, baseUrl: url, path, tls: admin, agent: keep, headers, ...(body === undefined ? {} : { body }) }).pipe(Effect.orDie)
        console.log(`probe ${label}: ${((cpuMs(pid) - c0) / n).toFixed(3)} ms verifier CPU per request (window ${t0} ${monotonicUs()})`)
      })
    const a0 = pushAgentId(0)
    yield* probe("GET /v3.0/ (platform, router)", "GET", "/v3.0/")
    yield* probe("GET /v2.6/agents/<id> (admin, v2 view)", "GET", `/v2.6/agents/${a0}`)
    yield* probe("GET /v3.0/agents/<id>/attestations/latest (admin)", "GET", `/v3.0/agents/${a0}/attestations/latest`)
    yield* probe("GET /v3.0/agents/<id> (admin, push status)", "GET", `/v3.0/agents/${a0}`)
    yield* probe("POST /v3.0/agents/<id>/attestations (bad token: 401)", "POST", `/v3.0/agents/${a0}/attestations`, { authorization: `Bearer ${"0".repeat(8)}-0000-4000-8000-000000000000.abc`, "content-type": "application/vnd.api+json" }, "{}")
    keep.destroy()
  }

  console.log(`${AGENTS} push agents (${Math.ceil(AGENTS / PER_PROC)} processes), quote_interval 2 s: warm-up ${m.warmSeconds.toFixed(1)} s, then ${m.inWindow} attestations in ${m.seconds.toFixed(1)} s (${(m.inWindow / m.seconds).toFixed(2)}/s), ${m.onSchedule}/${AGENTS} on schedule (a verdict every ≤ ${ON_SCHEDULE_PERIOD_S} s; mean period ${((m.seconds * AGENTS) / Math.max(1, m.inWindow)).toFixed(2)} s); ${m.verified} verified of the window's evidence (${m.passed} pass)`)
  console.log(`verifier CPU ${m.perAttestation.toFixed(2)} ms per attestation after warm-up (phase 1, phase 2, background verdict), ${m.cpuPercent.toFixed(0)}% of a core; verdict latency p50 ${m.p50} ms, p99 ${m.p99} ms; peak RSS +${rssAfter - rssBefore} kB over its RSS before enrolment, for ${AGENTS} agents`)
  console.log(`load generators (push fleet processes): ${m.fleetCpuPercent.toFixed(0)}% of a core; load average ${load()}`)
  console.log(`connections to the verifier: ${m.connections}`)
  console.log(`verifier CPU by thread over the window (ms per attestation): ${m.threads}`)
  console.log(`of which in the kernel: ${m.sysPerAttestation.toFixed(2)} ms per attestation`)
  console.log(`idle verifier: ${idleMsPerS.toFixed(1)} ms CPU per second`)
  console.log(`baseline evaluator in-process (evaluateEvidence, first evidence, whole IMA list): ${inProcessMs.toFixed(3)} ms; verifier CPU per push attestation / in-process evaluation ${(m.perAttestation / inProcessMs).toFixed(2)}`)
  if (prof !== undefined) console.log(`profile window (monotonic µs): ${m.window}`)
  console.log(`BENCH push_attestations_per_s ${(m.inWindow / m.seconds).toFixed(2)} 1/s`)
  console.log(`BENCH push_cpu_ms_per_attestation ${m.perAttestation.toFixed(2)} ms`)
  console.log(`BENCH push_agents_on_schedule_fraction ${(m.onSchedule / AGENTS).toFixed(2)}`)
  console.log(`BENCH push_verdict_p50_ms ${m.p50} ms`)
  console.log(`BENCH push_verdict_p99_ms ${m.p99} ms`)
  console.log(`BENCH push_kb_per_agent ${((rssAfter - rssBefore) / AGENTS).toFixed(0)} kB`)
  const pullFigure = m.pullFigure
  if (pullFigure !== undefined) {
    console.log(`pull over the same window: ${AGENTS} agents (bench/_fleet.ts), ${pullFigure.attestations} attestations in ${pullFigure.seconds.toFixed(1)} s, ${pullFigure.onSchedule}/${AGENTS} on schedule, verifier CPU ${pullFigure.cpuMsPerAttestation.toFixed(2)} ms per attestation (${pullFigure.sysMsPerAttestation.toFixed(2)} ms in the kernel; by thread: ${pullFigure.threads})`)
    console.log(`BENCH pull_cpu_ms_per_attestation ${pullFigure.cpuMsPerAttestation.toFixed(2)} ms`)
    console.log(`BENCH push_to_pull_cpu_ratio ${(m.perAttestation / pullFigure.cpuMsPerAttestation).toFixed(2)}`)
  }
  console.log(`BENCH push_evaluate_in_process_ms ${inProcessMs.toFixed(3)} ms`)
})

Effect.runPromise(Effect.scoped(main).pipe(Logger.withMinimumLogLevel(LogLevel.Error))).then(
  () => process.exit(0),
  (e) => {
    console.error(e)
    process.exit(1)
  }
)
