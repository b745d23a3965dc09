/**
 * POST verify/evidence throughput and latency: 8 concurrent clients with keep-alive HTTPS and an
 * admin client certificate (mTLS) against the verifier's real listener (in this process, SQLite),
 * each sending the captured Keylime request `ver-evidence-ok-runtime-policy` (quote, IMA list,
 * runtime policy, tpm_policy: a valid attestation). Baselines measured in the same run: GET
 * /version through the same stack (what HTTPS + the platform cost per request) and the same
 * request judged in-process by `verifyEvidenceRequest` (what the evaluation costs without HTTP).
 *
 *   npm run bench -- verify-evidence [requests]
 */
import { Effect, Logger, LogLevel } from "effect"
import * as https from "node:https"
import { acceptAllPolicy } from "../src/boot/policy.js"
import { rawRequest } from "../src/http/client.js"
import { parseVersion } from "../src/http/versions.js"
import { defaultSeverityPolicy, verifyEvidenceRequest } from "../src/verifier/index.js"
import { testDatabase } from "../test/support/db.js"
import { makeTestPki, removePki, startVerifier } from "../test/verifier/apiHarness.js"
import { record } from "../test/verifier/support.js"

const REQUESTS = Number(process.argv[2] ?? 3000)
const CONCURRENCY = 8
const pki = makeTestPki()
const evidence = JSON.stringify(record("ver-evidence-ok-runtime-policy").request.body)

const percentile = (sorted: ReadonlyArray<number>, p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!

const main = Effect.gen(function*() {
  const db = yield* testDatabase("sqlite")
  const v = yield* startVerifier({ pki, db })
  const agent = new https.Agent({ keepAlive: true, maxSockets: CONCURRENCY })
  yield* Effect.addFinalizer(() => Effect.sync(() => agent.destroy()))
  const send = (method: string, path: string, body?: string) =>
    rawRequest({
      method,
      baseUrl: v.url,
      path,
      agent,
      tls: pki.clients.admin,
      ...(body === undefined ? {} : { body, headers: { "content-type": "application/json" } })
    }).pipe(Effect.orDie)

  /** `n` requests from CONCURRENCY clients: requests/s and each request's latency. */
  const load = (n: number, one: () => Effect.Effect<unknown>) =>
    Effect.gen(function*() {
      const latencies: Array<number> = []
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
      latencies.sort((a, b) => a - b)
      return { perS: n / seconds, p50: percentile(latencies, 50), p99: percentile(latencies, 99) }
    })

  const check = send("POST", "/v2.6/verify/evidence", evidence)
  const first = yield* check
  const answer = JSON.parse(first.body) as { results: { valid: boolean } }
  if (first.status !== 200 || answer.results.valid !== true) return yield* Effect.dieMessage(`the request is not a valid attestation: ${first.body.slice(0, 300)}`)

  // warm-up (JIT, TLS sessions, connection pool)
  yield* load(300, () => check)
  yield* load(300, () => send("GET", "/version"))

  const version = yield* load(REQUESTS, () => send("GET", "/version"))
  const http = yield* load(REQUESTS, () => check)

  // the evaluator alone, in this process, on the same request body
  const body = JSON.parse(evidence) as unknown
  const ctx = { severity: defaultSeverityPolicy, measuredBootPolicy: acceptAllPolicy, reportTomtou: false }
  const v26 = parseVersion("2.6")!
  for (let i = 0; i < 200; i++) verifyEvidenceRequest(body, v26, ctx)
  const inStart = performance.now()
  const inN = Math.max(500, REQUESTS)
  for (let i = 0; i < inN; i++) verifyEvidenceRequest(JSON.parse(evidence) as unknown, v26, ctx)
  const inProcessMs = (performance.now() - inStart) / inN

  console.log(`verify/evidence over HTTPS mTLS, ${CONCURRENCY} clients, ${REQUESTS} requests: ${http.perS.toFixed(0)}/s, p50 ${http.p50.toFixed(2)} ms, p99 ${http.p99.toFixed(2)} ms`)
  console.log(`baseline GET /version, same stack: ${version.perS.toFixed(0)}/s, p50 ${version.p50.toFixed(2)} ms, p99 ${version.p99.toFixed(2)} ms; evidence/version ratio ${(http.perS / version.perS).toFixed(3)}`)
  console.log(`baseline evaluator in-process (JSON.parse + verifyEvidenceRequest, one core): ${inProcessMs.toFixed(3)} ms = ${(1000 / inProcessMs).toFixed(0)}/s; HTTP throughput / in-process ${(http.perS / (1000 / inProcessMs)).toFixed(3)}`)
  console.log(`BENCH verify_evidence_per_s ${http.perS.toFixed(0)} 1/s`)
  console.log(`BENCH verify_evidence_p50_ms ${http.p50.toFixed(2)} ms`)
  console.log(`BENCH verify_evidence_p99_ms ${http.p99.toFixed(2)} ms`)
  console.log(`BENCH verify_evidence_ratio_to_version ${(http.perS / version.perS).toFixed(3)}`)
  console.log(`BENCH verify_evidence_in_process_ms ${inProcessMs.toFixed(3)} ms`)
})

Effect.runPromise(main.pipe(Effect.scoped, Logger.withMinimumLogLevel(LogLevel.Warning), Effect.ensuring(Effect.sync(() => removePki(pki))))).then(
  () => process.exit(0),
  (e) => {
    console.error(e)
    process.exit(1)
  }
)
