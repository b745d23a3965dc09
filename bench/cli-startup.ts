/**
 * Start-up of the built `attest` executable (dist/cli/attest.js, bundled first when missing or
 * stale): `attest --version`, `attest policy --help`, `attest tenant --help` and `attest tenant status` (a whole command:
 * config, mTLS, GET /version and the agent's status from a verifier running in this process over
 * HTTPS, with a generated CA) against `node -e 0`, the floor no Node program starts under, measured
 * in the same run. Median of 10 wall-clock runs each, taken in interleaved rounds so a change in
 * machine load touches every case alike. Children are spawned asynchronously: the verifier they
 * talk to runs on this process's event loop.
 *
 *   npm run bench -- cli-startup                 the bundle
 *   npm run bench -- cli-startup --bin <file>    another build of the executable, for comparison
 */
import { execFileSync, spawn } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { performance } from "node:perf_hooks"
import { Context, Effect, Exit, Layer, Scope } from "effect"
import { BoundListeners } from "../src/http/HttpServers.js"
import { sectionDefaults } from "../src/config/load.js"
import { verifierSection } from "../src/config/sections.js"
import { rawRequest } from "../src/http/client.js"
import { VerifierFromConfig } from "../src/verifier/fromConfig.js"
import { VERIFIER_LISTENER } from "../src/verifier/Server.js"

const RUNS = 10
const binAt = process.argv.indexOf("--bin")
const bin = binAt > 0 ? process.argv[binAt + 1]! : "dist/cli/attest.js"
if (binAt < 0) execFileSync(process.execPath, ["scripts/build-if-needed.mjs"], { stdio: "inherit" })

interface Case {
  readonly name: string
  readonly args: ReadonlyArray<string>
  /** What the output must contain: a run that prints something else measures nothing. */
  readonly expect: RegExp
  readonly times: Array<number>
}

// a verifier with one agent (the body Keylime's tenant sends, from the recorded exchanges)
const dir = mkdtempSync(join(tmpdir(), "attest-bench-cli-"))
const scope = Effect.runSync(Scope.make())
const section = sectionDefaults(verifierSection, { ip: "127.0.0.1", port: 0, tls_dir: "generate", ca_dir: join(dir, "cv_ca"), data_dir: dir, metrics_port: 0, log_level: "warning" })
const verifierUrl = await Effect.runPromise(
  Layer.buildWithScope(VerifierFromConfig(section), scope).pipe(Effect.map((ctx) => Context.get(ctx, BoundListeners).get(VERIFIER_LISTENER)!.url))
)
const record = readFileSync("../shared/vectors/keylime-wire/verifier.jsonl", "utf8").split("\n").find((l) => l.includes(`"id": "ver-add-ok"`))
const addBody = (JSON.parse(record!) as { request: { body: unknown } }).request.body
const AGENT = "d432fbb3-d2f1-4a97-9ef7-75bd81c00011"
const tls = { ca: readFileSync(join(dir, "cv_ca", "cacert.crt"), "utf8"), cert: readFileSync(join(dir, "cv_ca", "client-cert.crt"), "utf8"), key: readFileSync(join(dir, "cv_ca", "client-private.pem"), "utf8") }
const added = await Effect.runPromise(rawRequest({ method: "POST", baseUrl: verifierUrl, path: `/v2.6/agents/${AGENT}`, body: JSON.stringify(addBody), headers: { "content-type": "application/json" }, tls }))
if (added.status !== 200) throw new Error(`adding the agent failed: ${added.body}`)
const config = join(dir, "attest.toml")
writeFileSync(config, `[tenant]\ntls_dir = "${join(dir, "cv_ca")}"\nca_dir = "${join(dir, "cv_ca")}"\nverifier_port = ${new URL(verifierUrl).port}\n`)

const cases: ReadonlyArray<Case> = [
  { name: "node -e 0", args: ["-e", "0"], expect: /^$/, times: [] },
  { name: "attest --version", args: [bin, "--version"], expect: /^\d+\.\d+\.\d+/, times: [] },
  { name: "attest policy --help", args: [bin, "policy", "--help"], expect: /check-boot/, times: [] },
  { name: "attest tenant --help", args: [bin, "tenant", "--help"], expect: /runtime-policy/, times: [] },
  { name: "attest tenant status", args: [bin, "tenant", "status", "--uuid", AGENT, "--config", config], expect: /state: +Start \(1\)/, times: [] }
]

const run = (args: ReadonlyArray<string>) =>
  new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn(process.execPath, args)
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()))
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()))
    child.once("error", reject)
    child.once("close", (status) => resolve({ status, stdout, stderr }))
  })

for (let round = 0; round < RUNS; round++) {
  for (const c of cases) {
    const t0 = performance.now()
    const r = await run(c.args)
    const ms = performance.now() - t0
    if (r.status !== 0 || !c.expect.test(r.stdout)) {
      throw new Error(`${c.name} failed (status ${r.status}): ${r.stderr || r.stdout}`)
    }
    c.times.push(ms)
  }
}
await Effect.runPromise(Scope.close(scope, Exit.void))
rmSync(dir, { recursive: true, force: true })

const median = (xs: ReadonlyArray<number>) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length % 2 === 1 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2
}
const [floor, version, help, tenantHelp, tenantStatus] = cases.map((c) => median(c.times)) as [number, number, number, number, number]
const row = (c: Case, m: number) =>
  `${c.name.padEnd(22)} median ${m.toFixed(0).padStart(5)} ms   min ${Math.min(...c.times).toFixed(0).padStart(5)} ms   max ${Math.max(...c.times).toFixed(0).padStart(5)} ms   ${(m / floor).toFixed(1).padStart(5)} x floor`
console.log(`${bin}, ${RUNS} runs each`)
for (const [i, c] of cases.entries()) console.log(row(c, [floor, version, help, tenantHelp, tenantStatus][i]!))
console.log(`BENCH node_floor_ms ${floor.toFixed(0)} ms`)
console.log(`BENCH cli_version_ms ${version.toFixed(0)} ms`)
console.log(`BENCH cli_help_ms ${help.toFixed(0)} ms`)
console.log(`BENCH cli_version_vs_floor_ratio ${(version / floor).toFixed(2)}`)
console.log(`BENCH cli_help_vs_floor_ratio ${(help / floor).toFixed(2)}`)
console.log(`BENCH cli_tenant_help_ms ${tenantHelp.toFixed(0)} ms`)
console.log(`BENCH tenant_status_ms ${tenantStatus.toFixed(0)} ms`)
console.log(`BENCH tenant_status_vs_version_ratio ${(tenantStatus / version).toFixed(2)}`)
