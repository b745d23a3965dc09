/**
 * A fleet of push agents against one verifier: `attest verifier` runs as its own process (SQLite,
 * generated CA, quote_interval = 2 s, both API families); N push agents run in this process, each
 * with its own simulated TPM and machine, enrolled over v2 with a runtime policy of its IMA list.
 * Figures: attestations/s, the verifier's CPU per attestation (from /proc: session, phase 1,
 * phase 2 and the background verdict), evidence-to-verdict latency p50/p99 (the verifier's own
 * evidence_received_at → verification_completed_at), the verifier's memory per agent (RSS growth
 * over the run / N). Baseline in the same run: the evaluator alone in this process on one agent's
 * first evidence (evaluateEvidence over its whole IMA list). The pull figure (bench/_pullPhase.ts):
 * a pull-mode verifier with N pull agents runs beside the push fleet, and both verifiers' CPU is read
 * over the same window, so the machine's load moves both alike (BENCH_PULL=0 leaves it out).
 *
 *   npm run bench -- push-fleet [agents] [seconds]
 */
import { Duration, Effect, Fiber, Layer, Logger, LogLevel, Option, Ref, Schedule } from "effect"
import { spawn } from "node:child_process"
import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { TpmSimulator } from "../src/tpm/simulator/TpmSimulator.js"
import { MeasurementSource } from "../src/agent/measurements/MeasurementSource.js"
import { establishTpmIdentity } from "../src/agent/tpmIdentity.js"
import * as SimulatedMachine from "../src/agent/measurements/SimulatedMachine.js"
import { rawRequest } from "../src/http/client.js"
import { CA_FILES } from "../src/pki/layout.js"
import { Tpm } from "../src/tpm/Tpm.js"
import { policyOfMachine } from "../test/push/support.js"
import { inProcessEvaluationMs } from "./_pushBaseline.js"
import { attestCommand } from "./_verifierCommand.js"
import { cpuMs, sysMs, threadCpuMs, threadSplit } from "./_procCpu.js"
import { startPull } from "./_pullPhase.js"
import { startPushAgents } from "./_pushAgents.js"
import { validBody } from "../test/verifier/support.js"

const AGENTS = Number(process.argv[2] ?? 20)
const SECONDS = Number(process.argv[3] ?? 30)
/**
 * Seconds of steady attestation before the measured window (both sides; BENCH_SETTLE_S). V8 is
 * still optimizing the attestation path a minute in (its compiler threads then cost a push
 * attestation twice what they do after two), and a verifier runs for days.
 */
const SETTLE_SECONDS = Number(process.env["BENCH_SETTLE_S"] ?? 120)

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
const b64 = (b: Uint8Array | string) => Buffer.from(b).toString("base64")
const idOf = (i: number) => `f1ee7000-0000-4000-8000-${String(i).padStart(12, "0")}`

const main = Effect.gen(function*() {
  const dir = mkdtempSync(join(tmpdir(), "attest-bench-push-"))
  yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
  const caDir = join(dir, "cv_ca")
  const config = join(dir, "attest.toml")
  writeFileSync(config, ["[verifier]", "port = 0", `tls_dir = "generate"`, `ca_dir = "${caDir}"`, `data_dir = "${join(dir, "data")}"`, "metrics_port = 0", `log_level = "warning"`, "quote_interval = 2", `mode = "push"`, `policy_cache_size = ${AGENTS}`, ""].join("\n"))
  // push mode: a push deployment's verifier runs no pull loop (in pull mode the loop would poll the
  // v2-enrolled agents at their contact port). Every agent has its own runtime policy here: the
  // cache holds them all, as the pull bench's one shared policy stays compiled.
  // BENCH_PROF_DIR=<dir>: a CPU profile of the verifier process (written when it exits); the fleet's
  // window is printed in the profile's clock (monotonic µs) for bench/_profileSummary.ts
  const prof = process.env["BENCH_PROF_DIR"]
  const perfOut = process.env["BENCH_PERF"]
  const child = spawn(process.execPath, [...(prof === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${prof}`]), ...(perfOut === undefined ? [] : ["--perf-basic-prof"]), ...(process.env["BENCH_VERIFIER_FLAGS"]?.split(" ").filter((f) => f !== "") ?? []), ...attestCommand(["verifier", "--config", config])], {
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
  const send = (method: string, path: string, body?: unknown) =>
    rawRequest({ method, baseUrl: url, path, tls: admin, ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { "content-type": "application/json" } }) }).pipe(
      Effect.map((r) => ({ status: r.status, json: r.body === "" ? undefined : JSON.parse(r.body) })),
      Effect.orDie
    )

  // one simulated TPM and machine per agent; the admin enrols each with its AK and its IMA list as policy
  const rssBefore = rssKb(pid)
  // the verifier's peak RSS from here to the end, sampled twice a second (one reading is GC noise)
  let rssPeak = rssBefore
  yield* Effect.forkScoped(Effect.repeat(Effect.sync(() => {
    rssPeak = Math.max(rssPeak, rssKb(pid))
  }), Schedule.spaced("500 millis")))
  const agents = yield* Effect.forEach(Array.from({ length: AGENTS }, (_, i) => i), (i) =>
    Effect.gen(function*() {
      const agentId = idOf(i)
      const ctx = yield* Layer.build(SimulatedMachine.layer({ name: `fleet-${i}` }).pipe(Layer.provideMerge(TpmSimulator.layer({}))))
      const tpm = ctx.unsafeMap.get(Tpm.key) as Tpm["Type"]
      const source = ctx.unsafeMap.get(MeasurementSource.key) as MeasurementSource["Type"]
      const dataDir = join(dir, `agent-${i}`)
      // the AK the agent will load from its data directory
      const { ak } = yield* establishTpmIdentity({ agentId, dataDir, ekAlg: "rsa", ak: { alg: "rsa", bits: 2048, hash: "sha256", scheme: "rsassa" } }).pipe(Effect.provide(ctx))
      const list = Option.getOrThrow(yield* Effect.orDie(source.imaList(0))).list
      const policy = policyOfMachine(list)
      const added = yield* send("POST", `/v2.6/agents/${agentId}`, { ...validBody(), ak_tpm: b64(ak.public), runtime_policy: b64(policy), accept_tpm_hash_algs: ["sha256"], accept_tpm_signing_algs: ["rsassa"] })
      if (added.status !== 200) return yield* Effect.dieMessage(`enrolment of ${agentId}: ${added.status} ${JSON.stringify(added.json)}`)
      return { agentId, ctx, tpm, source, ak, policy, dataDir }
    }), { concurrency: 4 })

  // the baseline: the evaluator alone on agent 0's first evidence
  const a0 = agents[0]!
  const inProcessMs = yield* inProcessEvaluationMs(a0)

  // the verifier's own idle cost (timers, sweeps), part of every figure below
  const idle0 = cpuMs(pid)
  yield* Effect.sleep("3 seconds")
  const idleMsPerS = (cpuMs(pid) - idle0) / 3

  // the pull side (BENCH_PULL=0 leaves it out): a pull-mode verifier and its N agents, running
  // beside the push fleet so that both verifiers are measured over the same window
  const pull = process.env["BENCH_PULL"] === "0" ? undefined : yield* startPull({ agents: AGENTS, dir, caDir })

  // the fleet
  const { stats, fibers } = yield* startPushAgents(agents, url, ca)
  const accepted = Effect.map(Effect.forEach(stats, Ref.get), (all) => all.map((c) => c.accepted))
  // warm-up, as the pull bench's: every agent has its session (a real agent keeps one: each pass
  // extends it) and has sent its whole IMA list once; at most 60 s
  const warm = performance.now()
  while ((yield* accepted).some((n) => n < 2) && performance.now() - warm < 60_000) yield* Effect.sleep("500 millis")
  if (pull !== undefined) yield* pull.warm
  // then a steady state: the JIT done optimizing the attestation path, as on a verifier running for days
  yield* Effect.sleep(Duration.seconds(SETTLE_SECONDS))
  const warmSeconds = (performance.now() - warm) / 1000
  const pullBefore = pull?.begin()
  const cpuBefore = cpuMs(pid)
  const sysBefore = sysMs(pid)
  const threadsBefore = threadCpuMs(pid)
  // BENCH_PERF=<file>: `perf record` of the verifier over the window (on-CPU samples only)
  const perf = perfOut === undefined ? undefined : spawn("perf", ["record", "-F", "997", "-g", "-p", String(pid), "-o", perfOut], { stdio: "ignore" })
  const start = performance.now()
  const windowStartUs = monotonicUs()
  const acceptedBefore = (yield* accepted).reduce((a, b) => a + b, 0)
  const verifierPort = Number(new URL(url).port)
  const portsBefore = clientPortsOf(verifierPort)
  yield* Effect.sleep(Duration.seconds(SECONDS))
  const windowEndUs = monotonicUs()
  const cpu = cpuMs(pid) - cpuBefore
  const sys = sysMs(pid) - sysBefore
  const threadsAfter = threadCpuMs(pid)
  const pullFigure = pull === undefined || pullBefore === undefined ? undefined : pull.end(pullBefore)
  if (perf !== undefined) {
    perf.kill("SIGINT")
    yield* Effect.promise(() => new Promise((resolve) => perf.once("exit", resolve)))
  }
  const seconds = (performance.now() - start) / 1000
  const inWindow = (yield* accepted).reduce((a, b) => a + b, 0) - acceptedBefore
  // kept-alive connections: the same client ports at both ends of the window mean no new TLS handshakes
  const portsAfter = clientPortsOf(verifierPort)
  const kept = [...portsBefore].filter((p) => portsAfter.has(p)).length
  yield* Effect.forEach(fibers, Fiber.interrupt, { discard: true })
  yield* Effect.sleep("1 second") // the last verdicts
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
    yield* probe("GET /v3.0/ (platform, router)", "GET", "/v3.0/")
    yield* probe("GET /v2.6/agents/<id> (admin, v2 view)", "GET", `/v2.6/agents/${agents[0]!.agentId}`)
    yield* probe("GET /v3.0/agents/<id>/attestations/latest (admin)", "GET", `/v3.0/agents/${agents[0]!.agentId}/attestations/latest`)
    yield* probe("GET /v3.0/agents/<id> (admin, push status)", "GET", `/v3.0/agents/${agents[0]!.agentId}`)
    yield* probe("POST /v3.0/agents/<id>/attestations (bad token: 401)", "POST", `/v3.0/agents/${agents[0]!.agentId}/attestations`, { authorization: `Bearer ${"0".repeat(8)}-0000-4000-8000-000000000000.abc`, "content-type": "application/vnd.api+json" }, "{}")
    keep.destroy()
  }

  const latencies: Array<number> = []
  let done = 0
  let passed = 0
  for (const a of agents) {
    const listed = yield* send("GET", `/v3.0/agents/${a.agentId}/attestations`)
    for (const r of listed.json.data as Array<{ attributes: Record<string, string> }>) {
      if (r.attributes["stage"] !== "verification_complete") continue
      done++
      if (r.attributes["evaluation"] === "pass") passed++
      latencies.push(Date.parse(r.attributes["verification_completed_at"]!.replace(/(\.\d{3})\d{3}/, "$1")) - Date.parse(r.attributes["evidence_received_at"]!.replace(/(\.\d{3})\d{3}/, "$1")))
    }
  }
  latencies.sort((a, b) => a - b)
  const perAttestation = cpu / Math.max(1, inWindow)
  console.log(`${AGENTS} push agents, quote_interval 2 s: warm-up ${warmSeconds.toFixed(1)} s, then ${inWindow} attestations in ${seconds.toFixed(1)} s (${(inWindow / seconds).toFixed(2)}/s); ${done} verified in all (${passed} pass)`)
  console.log(`verifier CPU ${perAttestation.toFixed(2)} ms per attestation after warm-up (phase 1, phase 2, background verdict); verdict latency p50 ${percentile(latencies, 50).toFixed(0)} ms, p99 ${percentile(latencies, 99).toFixed(0)} ms; peak RSS +${(rssAfter - rssBefore)} kB over its RSS before enrolment, for ${AGENTS} agents`)
  const totals = (yield* Effect.forEach(stats, Ref.get)).reduce((t, c) => ({ accepted: t.accepted + c.accepted, refused: t.refused + c.refused, sessions: t.sessions + c.sessions }), { accepted: 0, refused: 0, sessions: 0 })
  console.log(`connections to the verifier: ${portsBefore.size} at the window's start, ${portsAfter.size} at its end, ${kept} the same (kept alive)`)
  console.log(`agents: ${totals.accepted} evidence accepted, ${totals.refused} steps refused, ${totals.sessions} sessions`)
  console.log(`verifier CPU by thread over the window (ms per attestation): ${threadSplit(threadsBefore, threadsAfter, inWindow)}`)
  console.log(`of which in the kernel: ${(sys / Math.max(1, inWindow)).toFixed(2)} ms per attestation`)
  console.log(`idle verifier: ${idleMsPerS.toFixed(1)} ms CPU per second`)
  console.log(`baseline evaluator in-process (evaluateEvidence, first evidence, whole IMA list): ${inProcessMs.toFixed(3)} ms; verifier CPU per push attestation / in-process evaluation ${(perAttestation / inProcessMs).toFixed(2)}`)
  if (prof !== undefined) console.log(`profile window (monotonic µs): ${windowStartUs} ${windowEndUs}`)
  console.log(`BENCH push_attestations_per_s ${(inWindow / seconds).toFixed(2)} 1/s`)
  console.log(`BENCH push_cpu_ms_per_attestation ${perAttestation.toFixed(2)} ms`)
  console.log(`BENCH push_verdict_p50_ms ${percentile(latencies, 50).toFixed(0)} ms`)
  console.log(`BENCH push_verdict_p99_ms ${percentile(latencies, 99).toFixed(0)} ms`)
  console.log(`BENCH push_kb_per_agent ${((rssAfter - rssBefore) / AGENTS).toFixed(0)} kB`)
  if (pullFigure !== undefined) {
    console.log(`pull over the same window: ${AGENTS} agents (bench/_fleet.ts), ${pullFigure.attestations} attestations in ${pullFigure.seconds.toFixed(1)} s, ${pullFigure.onSchedule}/${AGENTS} on schedule, verifier CPU ${pullFigure.cpuMsPerAttestation.toFixed(2)} ms per attestation (${pullFigure.sysMsPerAttestation.toFixed(2)} ms in the kernel; by thread: ${pullFigure.threads})`)
    console.log(`BENCH pull_cpu_ms_per_attestation ${pullFigure.cpuMsPerAttestation.toFixed(2)} ms`)
    console.log(`BENCH push_to_pull_cpu_ratio ${(perAttestation / pullFigure.cpuMsPerAttestation).toFixed(2)}`)
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
