/**
 * The server stack's CPU per request (issue 25 §4): `attest verifier` as its own process (SQLite,
 * generated CA, HTTPS with mTLS as configured) and, in the same run, a bare `node:https` server in
 * its own process with the same TLS material and policy (server key and certificate, client
 * certificates asked for from the same CA, the same ciphers) answering GET /version with the same
 * JSON. This process is the client: keep-alive connections presenting the generated admin
 * certificate. Measured: each server process's CPU per request from /proc (every thread: GC and
 * compiler threads count), for
 *
 *   - GET /version: public, unversioned, a constant answered before the Effect server (fixedRoutes.ts);
 *   - GET /v2.6/version: the same answer through the whole stack (platform, router, authorization
 *     middleware asking the provider, schema encode of the envelope), no caller identified, no database;
 *   - GET /v2.6/agents/ (admin): the generic route, `server_request_cpu_ms`: the caller identified by
 *     its certificate, one database read of an empty fleet (the route does little work, so the
 *     figure is the stack's).
 *
 * Rounds alternate between the servers so that the machine's load falls on all alike. With
 * BENCH_BASELINE=<another build's attest.js> (a copy of dist/ from before a change), a verifier of
 * that build runs beside this one and each route is measured on both in every round, in
 * alternating order: the ratio of the two is what a shared, noisy machine can still compare.
 *
 *   npm run bench -- server-request [requests per round] [rounds]
 *   BENCH_CONCURRENCY=n (default 4): keep-alive connections; BENCH_PROF_DIR=<dir>: CPU profile of the verifier
 */
import { spawn } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import * as https from "node:https"
import { loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { Effect } from "effect"
import { CA_FILES } from "../src/pki/layout.js"
import { clientTlsPolicy, serverTlsPolicy } from "../src/http/tlsPolicy.js"
import { V2_VERSIONS } from "../src/http/versions.js"
import { cpuMs, sysMs, threadCpuMs, threadSplit } from "./_procCpu.js"
import { spawnVerifier } from "./_verifierProcess.js"

const REQUESTS = Number(process.argv[2] ?? 4000)
const ROUNDS = Number(process.argv[3] ?? 3)
const CONCURRENCY = Number(process.env["BENCH_CONCURRENCY"] ?? 4)

/** The bare server: node:https and nothing else, plain JavaScript (no loader), the same TLS options. */
const BARE = `
const https = require("node:https"), fs = require("node:fs")
const [caDir, policy, body] = process.argv.slice(1)
const server = https.createServer({
  key: fs.readFileSync(caDir + "/${CA_FILES.serverKey}"), cert: fs.readFileSync(caDir + "/${CA_FILES.serverCert}"),
  ca: fs.readFileSync(caDir + "/${CA_FILES.caCert}"), requestCert: true, rejectUnauthorized: false, ...JSON.parse(policy)
}, (req, res) => {
  req.resume()
  req.on("end", () => res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) }).end(body))
})
server.listen(0, "127.0.0.1", () => console.log("bare listening on " + server.address().port))
`

const percentile = (sorted: ReadonlyArray<number>, p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!
const median = (xs: ReadonlyArray<number>) => percentile([...xs].sort((a, b) => a - b), 50)

const main = Effect.gen(function*() {
  const dir = mkdtempSync(join(tmpdir(), "attest-bench-request-"))
  yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
  const prof = process.env["BENCH_PROF_DIR"]
  const baseline = process.env["BENCH_BASELINE"]
  // a profile's clock is monotonic µs: each load's window is printed in it for bench/_profileSummary.ts
  const monotonicUs = () => Number(process.hrtime.bigint() / 1000n)
  const originUs = monotonicUs() - performance.now() * 1000
  /** A verifier in its own directory (CA, database), with keep-alive connections presenting its admin certificate. */
  const startVerifier = (name: string, nodeArgs: ReadonlyArray<string>, attest?: string) =>
    Effect.gen(function*() {
      const caDir = join(dir, name, "cv_ca")
      const config = join(dir, `${name}.toml`)
      writeFileSync(config, ["[verifier]", "port = 0", `tls_dir = "generate"`, `ca_dir = "${caDir}"`, `data_dir = "${join(dir, name, "data")}"`, "metrics_port = 0", `log_level = "warning"`, ""].join("\n"))
      const started = yield* spawnVerifier(config, caDir, nodeArgs, attest)
      const agent = new https.Agent({ keepAlive: true, maxSockets: CONCURRENCY, ...started.tls, ...clientTlsPolicy })
      yield* Effect.addFinalizer(() => Effect.sync(() => agent.destroy()))
      return { pid: started.pid, url: started.url, agent, caDir }
    })
  const verifier = yield* startVerifier("verifier", prof === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${prof}`])
  const old = baseline === undefined || baseline === "" ? undefined : yield* startVerifier("baseline", [], baseline)
  const caDir = verifier.caDir

  const versionBody = JSON.stringify({ code: 200, status: "Success", results: { current_version: V2_VERSIONS.current, supported_versions: V2_VERSIONS.supported } })
  const bareChild = spawn(process.execPath, ["-e", BARE, caDir, JSON.stringify(serverTlsPolicy), versionBody], { stdio: ["ignore", "pipe", "inherit"] })
  const bareExited = new Promise((r) => bareChild.once("exit", r))
  yield* Effect.addFinalizer(() => Effect.promise(() => (bareChild.kill("SIGINT"), bareExited)))
  const barePort = yield* Effect.async<number>((resume) => {
    let out = ""
    bareChild.stdout.on("data", (d: Buffer) => {
      out += d.toString()
      const m = /bare listening on (\d+)/.exec(out)
      if (m) resume(Effect.succeed(Number(m[1])))
    })
    bareChild.once("exit", (code) => resume(Effect.dieMessage(`bare server exited (${code}): ${out}`)))
  })
  const bare = { pid: bareChild.pid!, url: `https://127.0.0.1:${barePort}`, agent: verifier.agent }
  type Server = typeof bare
  /**
   * One GET on a keep-alive connection; its status and body length are checked. A connection the
   * server closed as idle while it waited in the pool (5 s keep-alive: a slow round of another
   * route on a loaded machine) is reset as it is reused: that request is sent again, once, as
   * node's documentation advises (`reusedSocket`).
   */
  const get = (server: Server, path: string, retried = false): Promise<number> =>
    new Promise((resolve, reject) => {
      const base = server.url
      const req = https.request(base + path, { agent: server.agent, method: "GET" }, (res) => {
        let n = 0
        res.on("data", (d: Buffer) => (n += d.length))
        res.on("end", () => res.statusCode === 200 && n > 0 ? resolve(n) : reject(new Error(`GET ${base}${path}: ${res.statusCode}`)))
      })
      req.on("error", (e: NodeJS.ErrnoException) => {
        if (e.code === "ECONNRESET" && req.reusedSocket && !retried) get(server, path, true).then(resolve, reject)
        else reject(e)
      })
      req.end()
    })

  /** `n` GETs over CONCURRENCY connections: the server's CPU per request (all threads), its threads' split, the latency. */
  const load = (server: Server, path: string, n: number) =>
    Effect.promise(async () => {
      const latencies: Array<number> = []
      const threads = threadCpuMs(server.pid)
      const before = cpuMs(server.pid)
      const sysBefore = sysMs(server.pid)
      let next = 0
      const worker = async () => {
        while (next < n) {
          next++
          const t = performance.now()
          await get(server, path)
          latencies.push(performance.now() - t)
        }
      }
      const start = performance.now()
      await Promise.all(Array.from({ length: CONCURRENCY }, worker))
      const seconds = (performance.now() - start) / 1000
      const cpu = (cpuMs(server.pid) - before) / n
      const sys = (sysMs(server.pid) - sysBefore) / n
      if (prof !== undefined) console.log(`profile window ${server.url}${path} ${Math.round(start * 1000 + originUs)} ${monotonicUs()} (${n} requests)`)
      latencies.sort((a, b) => a - b)
      return { cpu, sys, perS: n / seconds, p50: percentile(latencies, 50), max: latencies.at(-1) ?? 0, threads: threadSplit(threads, threadCpuMs(server.pid), n) }
    })

  /** The routes measured on the verifier: label, path (the bare server answers GET /version only). */
  const routes = [
    { label: "GET /version (fixed)", path: "/version" },
    { label: "GET /v2.6/version (routed, public)", path: "/v2.6/version" },
    { label: "GET /v2.6/agents/ (admin, mTLS)", path: "/v2.6/agents/" }
  ] as const
  // warm-up: JIT, connections, the verifier's first database read
  for (let i = 0; i < 2; i++) {
    yield* load(bare, "/version", 2000)
    for (const r of routes) {
      yield* load(verifier, r.path, 1000)
      if (old !== undefined) yield* load(old, r.path, 1000)
    }
  }
  const bareCpu: Array<number> = []
  const routeCpu: Array<Array<number>> = routes.map(() => [])
  /** Per route, this build's CPU ÷ the baseline build's, each round (the two measured back to back). */
  const toBaseline: Array<Array<number>> = routes.map(() => [])
  const baselineCpu: Array<Array<number>> = routes.map(() => [])
  for (let round = 1; round <= ROUNDS; round++) {
    const b = yield* load(bare, "/version", REQUESTS)
    bareCpu.push(b.cpu)
    console.log(`round ${round} (load ${loadavg().map((l) => l.toFixed(2)).join(" ")}): bare node:https GET /version ${b.cpu.toFixed(3)} ms (kernel ${b.sys.toFixed(3)}; ${b.perS.toFixed(0)}/s, p50 ${b.p50.toFixed(2)} ms, max ${b.max.toFixed(0)}; ${b.threads})`)
    for (const [i, r] of routes.entries()) {
      // with a baseline, the two in alternating order each round
      const order = old === undefined ? [verifier] : round % 2 === 1 ? [verifier, old] : [old, verifier]
      const cpu = new Map<Server, number>()
      for (const server of order) {
        const v = yield* load(server, r.path, REQUESTS)
        cpu.set(server, v.cpu)
        const who = server === verifier ? "attest verifier" : "baseline build"
        console.log(`  ${who} ${r.label} ${v.cpu.toFixed(3)} ms (kernel ${v.sys.toFixed(3)}; ${v.perS.toFixed(0)}/s, p50 ${v.p50.toFixed(2)} ms, max ${v.max.toFixed(0)}; ${v.threads})`)
      }
      routeCpu[i]!.push(cpu.get(verifier)!)
      if (old !== undefined) {
        baselineCpu[i]!.push(cpu.get(old)!)
        toBaseline[i]!.push(cpu.get(verifier)! / cpu.get(old)!)
      }
    }
  }
  const bareMs = median(bareCpu)
  const [versionMs, routedMs, adminMs] = routeCpu.map(median) as [number, number, number]
  const ratio = (ms: number) => (ms / bareMs).toFixed(2)
  console.log(`server CPU per keep-alive HTTPS request, ${CONCURRENCY} connections, median of ${ROUNDS} rounds of ${REQUESTS} (load average ${loadavg().map((l) => l.toFixed(2)).join(" ")}):`)
  console.log(`  bare node:https ${bareMs.toFixed(3)} ms; attest ${routes.map((r, i) => `${r.label} ${median(routeCpu[i]!).toFixed(3)} ms (${ratio(median(routeCpu[i]!))}x bare)`).join(", ")}`)
  // the generic route: an authenticated admin request through the whole stack, doing little work
  console.log(`BENCH server_request_cpu_ms ${adminMs.toFixed(3)} ms`)
  console.log(`BENCH server_request_ratio_to_bare ${ratio(adminMs)}`)
  console.log(`BENCH server_request_bare_cpu_ms ${bareMs.toFixed(3)} ms`)
  console.log(`BENCH server_request_routed_cpu_ms ${routedMs.toFixed(3)} ms`)
  console.log(`BENCH server_request_routed_ratio_to_bare ${ratio(routedMs)}`)
  console.log(`BENCH server_request_fixed_cpu_ms ${versionMs.toFixed(3)} ms`)
  console.log(`BENCH server_request_fixed_ratio_to_bare ${ratio(versionMs)}`)
  if (old !== undefined) {
    console.log(`against the baseline build ${baseline} in the same rounds (median of the per-round ratios):`)
    console.log(`  ${routes.map((r, i) => `${r.label} ${median(baselineCpu[i]!).toFixed(3)} ms, this build ÷ baseline ${median(toBaseline[i]!).toFixed(2)}`).join("; ")}`)
    console.log(`BENCH server_request_baseline_cpu_ms ${median(baselineCpu[2]!).toFixed(3)} ms`)
    console.log(`BENCH server_request_to_baseline_ratio ${median(toBaseline[2]!).toFixed(2)}`)
    console.log(`BENCH server_request_routed_to_baseline_ratio ${median(toBaseline[1]!).toFixed(2)}`)
  }
})

Effect.runPromise(Effect.scoped(main)).then(
  () => process.exit(0),
  (e) => {
    console.error(e)
    process.exit(1)
  }
)
