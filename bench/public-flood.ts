/**
 * Issue 22 §1: can anonymous verify/evidence requests slow attestation down? One `attest verifier`
 * process (bundle, SQLite, quote_interval 2 s, both API families) attests N pull agents
 * (bench/_fleet.ts, its own process: genuinely signed quotes against a 100,000-digest policy) and
 * M push agents (this process: simulated TPMs, runPushAgent). After a warm-up, a window of S
 * seconds without and one with K clients (test/verifier/floodClients.ts, a process of their own)
 * posting verify/evidence back to back, each request with a 100,000-digest runtime policy of its
 * own (no compile cache helps: the worst case). Figures: attestations in the flood window ÷ in the
 * quiet one, pull and push (target ≥ 0.9); push agents seen TIMEOUT (sampled every second; target
 * 0); the flood's answers by status; then small verify/evidence requests (the captured valid one, 8
 * clients) per second against the same verifier, with GET /version through the same stack as the
 * same run's baseline (compare verify_evidence_per_s with `npm run bench -- verify-evidence`).
 *
 *   npm run bench -- public-flood [--seconds S] [--pull N] [--push M] [--clients K] [--nice 0-19]
 */
import { Duration, Effect, Fiber, Layer, Logger, LogLevel, Option, Ref, Schedule } from "effect"
import { spawn } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import * as https from "node:https"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { TpmSimulator } from "../src/tpm/simulator/TpmSimulator.js"
import { MeasurementSource } from "../src/agent/measurements/MeasurementSource.js"
import * as SimulatedMachine from "../src/agent/measurements/SimulatedMachine.js"
import { establishTpmIdentity } from "../src/agent/tpmIdentity.js"
import { rawRequest } from "../src/http/client.js"
import { policyOfMachine } from "../test/push/support.js"
import { floodBody } from "../test/verifier/floodBody.js"
import { record, validBody } from "../test/verifier/support.js"
import { startPull } from "./_pullPhase.js"
import { startPushAgents } from "./_pushAgents.js"

const arg = (name: string, fallback: number): number => {
  const i = process.argv.indexOf(`--${name}`)
  return i >= 0 ? Number(process.argv[i + 1]) : fallback
}
const SECONDS = arg("seconds", 30)
const PULL = arg("pull", 8)
const PUSH = arg("push", 8)
const CLIENTS = arg("clients", 4)
/** `verify_worker_nice` of the verifier (--nice; default the option's, 0). */
const NICE = arg("nice", 0)

const b64 = (b: Uint8Array | string) => Buffer.from(b).toString("base64")
const idOf = (i: number) => `f100d000-0000-4000-8000-${String(i).padStart(12, "0")}`

const main = Effect.gen(function*() {
  const dir = mkdtempSync(join(tmpdir(), "attest-bench-flood-"))
  yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
  const caDir = join(dir, "cv_ca")
  const pull = yield* startPull({ agents: PULL, dir, caDir, extraConfig: [`verify_worker_nice = ${NICE}`] })
  const { url, admin } = pull
  const send = (method: string, path: string, body?: unknown) =>
    rawRequest({ method, baseUrl: url, path, tls: admin, ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { "content-type": "application/json" } }) }).pipe(
      Effect.map((r) => ({ status: r.status, json: r.body === "" ? undefined : JSON.parse(r.body) })),
      Effect.orDie
    )

  // push agents: one simulated TPM and machine each, enrolled as push agents with their IMA list as policy
  const agents = yield* Effect.forEach(Array.from({ length: PUSH }, (_, i) => i), (i) =>
    Effect.gen(function*() {
      const agentId = idOf(i)
      const ctx = yield* Layer.build(SimulatedMachine.layer({ name: `flood-${i}` }).pipe(Layer.provideMerge(TpmSimulator.layer({}))))
      const source = ctx.unsafeMap.get(MeasurementSource.key) as MeasurementSource["Type"]
      const dataDir = join(dir, `agent-${i}`)
      const { ak } = yield* establishTpmIdentity({ agentId, dataDir, ekAlg: "rsa", ak: { alg: "rsa", bits: 2048, hash: "sha256", scheme: "rsassa" } }).pipe(Effect.provide(ctx))
      const list = Option.getOrThrow(yield* Effect.orDie(source.imaList(0))).list
      const added = yield* send("POST", `/v2.6/agents/${agentId}`, {
        ...validBody(),
        ak_tpm: b64(ak.public),
        runtime_policy: b64(policyOfMachine(list)),
        accept_tpm_hash_algs: ["sha256"],
        accept_tpm_signing_algs: ["rsassa"],
        attestation_model: "push"
      })
      if (added.status !== 200) return yield* Effect.dieMessage(`enrolment of ${agentId}: ${added.status} ${JSON.stringify(added.json)}`)
      return { agentId, ctx, dataDir }
    }), { concurrency: 4 })
  const { stats, fibers } = yield* startPushAgents(agents, url, admin.ca)
  const accepted = Effect.map(Effect.forEach(stats, Ref.get), (all) => all.reduce((n, c) => n + c.accepted, 0))

  // push agents seen TIMEOUT: sampled every second over both windows
  const timedOut = new Set<string>()
  const sampler = yield* Effect.forkScoped(Effect.repeat(
    Effect.forEach(agents, (a) =>
      Effect.map(send("GET", `/v2.6/agents/${a.agentId}`), (r) => {
        if (r.json?.results?.attestation_status === "TIMEOUT") timedOut.add(a.agentId)
      }), { discard: true }),
    Schedule.spaced("1 second")
  ))

  // warm-up: every push agent passed twice, every pull agent attested twice
  const warm = performance.now()
  while ((yield* Effect.forEach(stats, Ref.get)).some((c) => c.accepted < 2) && performance.now() - warm < 90_000) yield* Effect.sleep("500 millis")
  yield* pull.warm
  timedOut.clear()

  const window = (flood: boolean) =>
    Effect.gen(function*() {
      const pullBefore = pull.begin()
      const pushBefore = yield* accepted
      const start = performance.now()
      let answers: unknown = undefined
      if (flood) {
        const bodyFile = join(dir, "flood.json")
        const caFile = join(dir, "ca.pem")
        writeFileSync(bodyFile, floodBody(100_000))
        writeFileSync(caFile, admin.ca)
        answers = yield* Effect.async<unknown>((resume) => {
          const child = spawn(process.execPath, ["--import", "tsx", "test/verifier/floodClients.ts", url, caFile, bodyFile, String(CLIENTS), String(SECONDS)], { stdio: ["ignore", "pipe", "inherit"] })
          let out = ""
          child.stdout.on("data", (d: Buffer) => (out += d.toString()))
          child.once("exit", () => resume(Effect.succeed(JSON.parse(out.slice(out.indexOf("\n") + 1)))))
        })
      } else {
        yield* Effect.sleep(Duration.seconds(SECONDS))
      }
      const seconds = (performance.now() - start) / 1000
      const pullFigure = pull.end(pullBefore)
      return { pullPerS: pullFigure.attestations / pullFigure.seconds, pushPerS: ((yield* accepted) - pushBefore) / seconds, seconds, answers }
    })
  const quiet = yield* window(false)
  const flood = yield* window(true)
  yield* Effect.sleep("2 seconds") // a TIMEOUT the flood caused shows by now
  // sampling stops before the agents do (a stopped push agent times out 10 s later, as it should)
  yield* Fiber.interrupt(sampler)
  const falseTimeouts = [...timedOut]
  yield* Effect.forEach(fibers, Fiber.interrupt, { discard: true })

  // small requests against the same verifier (agents stopped), and GET /version through the same stack
  const small = JSON.stringify(record("ver-evidence-ok-runtime-policy").request.body)
  const keepAlive = new https.Agent({ keepAlive: true, maxSockets: 8 })
  yield* Effect.addFinalizer(() => Effect.sync(() => keepAlive.destroy()))
  const rate = (n: number, one: () => Effect.Effect<number>) =>
    Effect.gen(function*() {
      const start = performance.now()
      const statuses = yield* Effect.forEach(Array.from({ length: n }), one, { concurrency: 8 })
      const bad = statuses.filter((s) => s !== 200).length
      if (bad > 0) return yield* Effect.dieMessage(`${bad} of ${n} answers were not 200`)
      return n / ((performance.now() - start) / 1000)
    })
  const evidence = () =>
    Effect.map(
      rawRequest({ method: "POST", baseUrl: url, path: "/v2.6/verify/evidence", agent: keepAlive, tls: admin, body: small, headers: { "content-type": "application/json" } }).pipe(Effect.orDie),
      (r) => r.status
    )
  const version = () => Effect.map(rawRequest({ method: "GET", baseUrl: url, path: "/version", agent: keepAlive, tls: admin }).pipe(Effect.orDie), (r) => r.status)
  yield* rate(300, evidence)
  const evidencePerS = yield* rate(2000, evidence)
  const versionPerS = yield* rate(2000, version)

  console.log(`${PULL} pull + ${PUSH} push agents, quote_interval 2 s; windows of ${SECONDS} s; verify_worker_nice ${NICE}; flood: ${CLIENTS} clients, 100,000-digest policy, a new one per request`)
  console.log(`quiet: pull ${quiet.pullPerS.toFixed(2)}/s, push ${quiet.pushPerS.toFixed(2)}/s; flood: pull ${flood.pullPerS.toFixed(2)}/s, push ${flood.pushPerS.toFixed(2)}/s; flood answers ${JSON.stringify(flood.answers)}`)
  console.log(`push agents seen TIMEOUT: ${falseTimeouts.length > 0 ? falseTimeouts.join(", ") : "none"}`)
  console.log(`small verify/evidence, 8 clients: ${evidencePerS.toFixed(0)}/s; baseline GET /version same stack ${versionPerS.toFixed(0)}/s (ratio ${(evidencePerS / versionPerS).toFixed(3)})`)
  console.log(`BENCH flood_pull_ratio ${(flood.pullPerS / quiet.pullPerS).toFixed(3)}`)
  console.log(`BENCH flood_push_ratio ${(flood.pushPerS / quiet.pushPerS).toFixed(3)}`)
  console.log(`BENCH flood_false_timeouts ${falseTimeouts.length}`)
  console.log(`BENCH verify_evidence_per_s ${evidencePerS.toFixed(0)} 1/s`)
  console.log(`BENCH version_per_s ${versionPerS.toFixed(0)} 1/s`)
})

Effect.runPromise(Effect.scoped(main).pipe(Logger.withMinimumLogLevel(LogLevel.Warning))).then(
  () => process.exit(0),
  (e) => {
    console.error(e)
    process.exit(1)
  }
)
