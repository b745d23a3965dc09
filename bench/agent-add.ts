/**
 * The verifier's CPU per v2 add (POST /v2.6/agents/{id}, issue 26's soak: 1,200 enrolments took
 * more than 15 minutes): `attest verifier` as its own process (pull mode, SQLite), the soak's
 * shared 100,000-file runtime policy uploaded first under the name "fleet", then N adds from this
 * process over keep-alive mTLS (admin certificate) with the soak's creation body (bench/_fleet.ts
 * fleetAgentBody: the policy by name, PCR 10, an ECC AK, a pinned certificate). The agents' port
 * refuses connections and `retry_interval` is long, so the pull loop's first attempt is all the
 * polling the window holds. Baseline in the same run: GET /v2.6/agents/{id} of an enrolled agent
 * (an admin request with one database read) through the same process.
 *
 *   npm run bench -- agent-add [adds]      (BENCH_PROF_DIR=<dir>: CPU profile of the verifier)
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import * as https from "node:https"
import { createServer } from "node:net"
import { loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { Effect } from "effect"
import { rawRequest } from "../src/http/client.js"
import { CA_FILES } from "../src/pki/layout.js"
import { marshalTpm2bPublic } from "../src/tpm/public.js"
import { makeAk } from "../test/tpm/quoteFixture.js"
import { fleetAgentBody, fleetRuntimePolicy } from "./_fleet.js"
import { cpuMs, threadCpuMs, threadSplit } from "./_procCpu.js"
import { spawnVerifier } from "./_verifierProcess.js"

const ADDS = Number(process.argv[2] ?? 300)
const CONCURRENCY = 8

/** A port nothing listens on: the pull loop's first attempt is refused at once. */
const closedPort = () =>
  new Promise<number>((resolve) => {
    const s = createServer()
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port
      s.close(() => resolve(port))
    })
  })

const main = Effect.gen(function*() {
  const dir = mkdtempSync(join(tmpdir(), "attest-bench-add-"))
  yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
  const caDir = join(dir, "cv_ca")
  const config = join(dir, "attest.toml")
  writeFileSync(config, [
    "[verifier]", "port = 0", `tls_dir = "generate"`, `ca_dir = "${caDir}"`, `data_dir = "${join(dir, "data")}"`, "metrics_port = 0",
    `log_level = "warning"`, `mode = "pull"`, "quote_interval = 2", "retry_interval = 3600", ""
  ].join("\n"))
  const prof = process.env["BENCH_PROF_DIR"]
  const verifier = yield* spawnVerifier(config, caDir, prof === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${prof}`])
  const agent = new https.Agent({ keepAlive: true, maxSockets: CONCURRENCY })
  yield* Effect.addFinalizer(() => Effect.sync(() => agent.destroy()))
  const send = (method: string, path: string, body?: unknown) =>
    rawRequest({ method, baseUrl: verifier.url, path, agent, tls: verifier.tls, ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { "content-type": "application/json" } }) }).pipe(Effect.orDie)
  const monotonicUs = () => Number(process.hrtime.bigint() / 1000n)

  const policy = yield* send("POST", "/v2.6/allowlists/fleet", { runtime_policy: Buffer.from(JSON.stringify(fleetRuntimePolicy())).toString("base64") })
  if (policy.status !== 201 && policy.status !== 200) return yield* Effect.dieMessage(`fleet policy: ${policy.status} ${policy.body}`)
  const port = yield* Effect.promise(closedPort)
  const ak = Buffer.from(marshalTpm2bPublic(makeAk("ecc").public)).toString("base64")
  const body = fleetAgentBody({ port, ak }, readFileSync(join(caDir, CA_FILES.serverCert), "utf8"))
  const id = (i: number) => `bench-add-${String(i).padStart(6, "0")}`

  /** `n` adds from `from` over CONCURRENCY connections: the verifier's CPU per add (all threads). */
  const adds = (from: number, n: number) =>
    Effect.gen(function*() {
      const threads = threadCpuMs(verifier.pid)
      const before = cpuMs(verifier.pid)
      const t0 = performance.now()
      const us0 = monotonicUs()
      yield* Effect.forEach(Array.from({ length: n }, (_, i) => id(from + i)), (agentId) =>
        Effect.flatMap(send("POST", `/v2.6/agents/${agentId}`, body), (r) =>
          r.status === 200 ? Effect.void : Effect.dieMessage(`add ${agentId}: ${r.status} ${r.body}`)), { concurrency: CONCURRENCY, discard: true })
      const seconds = (performance.now() - t0) / 1000
      if (prof !== undefined) console.log(`profile window adds ${us0} ${monotonicUs()} (${n} adds)`)
      return { cpu: (cpuMs(verifier.pid) - before) / n, perS: n / seconds, threads: threadSplit(threads, threadCpuMs(verifier.pid), n) }
    })
  const shows = (n: number) =>
    Effect.gen(function*() {
      const before = cpuMs(verifier.pid)
      yield* Effect.forEach(Array.from({ length: n }, (_, i) => id(i % 20)), (agentId) =>
        Effect.flatMap(send("GET", `/v2.6/agents/${agentId}`), (r) =>
          r.status === 200 ? Effect.void : Effect.dieMessage(`show ${agentId}: ${r.status} ${r.body}`)), { concurrency: CONCURRENCY, discard: true })
      return (cpuMs(verifier.pid) - before) / n
    })

  yield* adds(0, 30) // warm-up (JIT, connections)
  yield* shows(200)
  const load = loadavg().map((l) => l.toFixed(2)).join(" ")
  const add = yield* adds(1000, ADDS)
  const show = yield* shows(ADDS)
  console.log(`v2 add (POST /v2.6/agents/{id}, the soak's body, runtime policy "fleet" of 100,000 files by name), ${CONCURRENCY} clients, ${ADDS} adds (load average ${load}):`)
  console.log(`  verifier CPU ${add.cpu.toFixed(2)} ms per add (${add.perS.toFixed(0)} adds/s; ${add.threads}); baseline admin GET /v2.6/agents/{id} ${show.toFixed(2)} ms; add/show ${(add.cpu / show).toFixed(1)}x`)
  console.log(`BENCH agent_add_cpu_ms ${add.cpu.toFixed(2)} ms`)
  console.log(`BENCH agent_add_per_s ${add.perS.toFixed(0)} 1/s`)
  console.log(`BENCH agent_show_cpu_ms ${show.toFixed(2)} ms`)
})

Effect.runPromise(Effect.scoped(main)).then(
  () => process.exit(0),
  (e) => {
    console.error(e)
    process.exit(1)
  }
)
