/**
 * POST verify/evidence throughput, latency and server CPU: `attest verifier` runs as its own
 * process (SQLite, generated CA); 8 concurrent clients with keep-alive HTTPS and the generated
 * admin certificate (mTLS) send the captured Keylime request `ver-evidence-ok-runtime-policy`
 * (quote, IMA list, runtime policy, tpm_policy: a valid attestation). Baselines in the same run:
 * GET /version through the same process and stack (what HTTPS + the platform cost per request),
 * and the same request judged in this process by `verifyEvidenceRequest` (the evaluation without
 * HTTP). The verifier's CPU per request (from /proc) does not depend on what else the machine runs.
 *
 *   npm run bench -- verify-evidence [requests]      (BENCH_VERIFY_NICE=n: the workers' verify_worker_nice)
 */
import { Effect } from "effect"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import * as https from "node:https"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { acceptAllPolicy } from "../src/boot/policy.js"
import { rawRequest } from "../src/http/client.js"
import { parseVersion } from "../src/http/versions.js"
import { defaultSeverityPolicy, verifyEvidenceRequest } from "../src/verifier/index.js"
import { record } from "../test/verifier/support.js"
import { cpuMs } from "./_procCpu.js"
import { spawnVerifier } from "./_verifierProcess.js"

const REQUESTS = Number(process.argv[2] ?? 3000)
const CONCURRENCY = 8
const evidence = JSON.stringify(record("ver-evidence-ok-runtime-policy").request.body)

const percentile = (sorted: ReadonlyArray<number>, p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!


const main = Effect.gen(function*() {
  const dir = mkdtempSync(join(tmpdir(), "attest-bench-verifier-"))
  yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
  const caDir = join(dir, "cv_ca")
  const config = join(dir, "attest.toml")
  writeFileSync(config, ["[verifier]", "port = 0", `tls_dir = "generate"`, `ca_dir = "${caDir}"`, `data_dir = "${join(dir, "data")}"`, "metrics_port = 0", `log_level = "warning"`, ...(process.env["BENCH_VERIFY_NICE"] === undefined ? [] : [`verify_worker_nice = ${process.env["BENCH_VERIFY_NICE"]}`]), ""].join("\n"))
  // BENCH_PROF_DIR=<dir>: CPU profiles of the verifier's threads (the main loop's and the stateless workers'), written when it exits
  const prof = process.env["BENCH_PROF_DIR"]
  const { pid, tls, url } = yield* spawnVerifier(config, caDir, prof === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${prof}`])
  const agent = new https.Agent({ keepAlive: true, maxSockets: CONCURRENCY })
  yield* Effect.addFinalizer(() => Effect.sync(() => agent.destroy()))
  const send = (method: string, path: string, body?: string) =>
    rawRequest({ method, baseUrl: url, path, agent, tls, ...(body === undefined ? {} : { body, headers: { "content-type": "application/json" } }) }).pipe(Effect.orDie)

  /** `n` requests from CONCURRENCY clients: requests/s, each request's latency, the verifier's CPU per request. */
  const load = (n: number, one: () => Effect.Effect<unknown>) =>
    Effect.gen(function*() {
      const latencies: Array<number> = []
      const cpuBefore = cpuMs(pid)
      const start = performance.now()
      yield* Effect.forEach(
        Array.from({ length: n }),
        () =>
          Effect.suspend(() => {
            const t = performance.now()
            return Effect.tap(one(), () => Effect.sync(() => latencies.push(performance.now() - t)))
          }),
        { concurrency: CONCURRENCY, discard: true }
      )
      const seconds = (performance.now() - start) / 1000
      const serverCpuMs = (cpuMs(pid) - cpuBefore) / n
      latencies.sort((a, b) => a - b)
      return { perS: n / seconds, p50: percentile(latencies, 50), p99: percentile(latencies, 99), serverCpuMs }
    })

  // every answer must be the verdict: a refusal (503 when the stateless workers' queue is full) is not a faster request
  const check = send("POST", "/v2.6/verify/evidence", evidence).pipe(
    Effect.tap((r) => r.status === 200 ? Effect.void : Effect.dieMessage(`verify/evidence answered ${r.status}: ${r.body.slice(0, 200)}`))
  )
  const first = yield* check
  const answer = JSON.parse(first.body) as { results: { valid: boolean } }
  if (first.status !== 200 || answer.results.valid !== true) return yield* Effect.dieMessage(`the request is not a valid attestation: ${first.body.slice(0, 300)}`)

  // warm-up (JIT, TLS sessions, connection pool)
  yield* load(500, () => check)
  yield* load(500, () => send("GET", "/version"))

  const version = yield* load(REQUESTS, () => send("GET", "/version"))
  const http = yield* load(REQUESTS, () => check)

  // the evaluator alone, in this process, on the same request body
  const ctx = { severity: defaultSeverityPolicy, measuredBootPolicy: acceptAllPolicy, reportTomtou: false }
  const v26 = parseVersion("2.6")!
  for (let i = 0; i < 300; i++) verifyEvidenceRequest(JSON.parse(evidence) as unknown, v26, ctx)
  const inN = Math.max(1000, REQUESTS)
  const inStart = performance.now()
  for (let i = 0; i < inN; i++) verifyEvidenceRequest(JSON.parse(evidence) as unknown, v26, ctx)
  const inProcessMs = (performance.now() - inStart) / inN

  console.log(`verify/evidence over HTTPS mTLS to attest verifier (own process), ${CONCURRENCY} clients, ${REQUESTS} requests: ${http.perS.toFixed(0)}/s, p50 ${http.p50.toFixed(2)} ms, p99 ${http.p99.toFixed(2)} ms, verifier CPU ${http.serverCpuMs.toFixed(3)} ms per request`)
  console.log(`baseline GET /version, same process and stack: ${version.perS.toFixed(0)}/s, p50 ${version.p50.toFixed(2)} ms, p99 ${version.p99.toFixed(2)} ms, verifier CPU ${version.serverCpuMs.toFixed(3)} ms per request; evidence/version throughput ratio ${(http.perS / version.perS).toFixed(3)}`)
  console.log(`baseline evaluator in-process (JSON.parse + verifyEvidenceRequest): ${inProcessMs.toFixed(3)} ms per request; verifier CPU per evidence request / in-process evaluation ${(http.serverCpuMs / inProcessMs).toFixed(2)}`)
  console.log(`BENCH verify_evidence_per_s ${http.perS.toFixed(0)} 1/s`)
  console.log(`BENCH verify_evidence_p50_ms ${http.p50.toFixed(2)} ms`)
  console.log(`BENCH verify_evidence_p99_ms ${http.p99.toFixed(2)} ms`)
  console.log(`BENCH verify_evidence_server_cpu_ms ${http.serverCpuMs.toFixed(3)} ms`)
  console.log(`BENCH version_server_cpu_ms ${version.serverCpuMs.toFixed(3)} ms`)
  console.log(`BENCH verify_evidence_in_process_ms ${inProcessMs.toFixed(3)} ms`)
})

Effect.runPromise(Effect.scoped(main)).then(
  () => process.exit(0),
  (e) => {
    console.error(e)
    process.exit(1)
  }
)
