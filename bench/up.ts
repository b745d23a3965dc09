/**
 * `attest up` from start to the first successful attestation of every agent (registrar, verifier,
 * N simulated agents enrolled through the tenant's add), for 3, 30 and 300 agents, each in a fresh
 * data directory, on the built executable (dist/cli/attest.js); then N pull agents with N push agents
 * (`--push N`: push agents enrolled at the same verifier), for 3. The
 * baseline, measured in the same run, is `attest --version` (process start and module loading,
 * which every start pays).
 *
 *   npm run bench -- up                             3, 30 and 300 agents; 3 + 3 push
 *   npm run bench -- up --agents 3,30 --push 3,10   other fleet sizes (--push 0: no push run)
 */
import { execFileSync, spawn, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { performance } from "node:perf_hooks"
import { cpuMs } from "./_procCpu.js"

const bin = "dist/cli/attest.js"
execFileSync(process.execPath, ["scripts/build-if-needed.mjs"], { stdio: "inherit" })
const at = process.argv.indexOf("--agents")
const sizes = (at > 0 ? process.argv[at + 1]! : "3,30,300").split(",").map(Number)
const pushAt = process.argv.indexOf("--push")
const pushSizes = (pushAt > 0 ? process.argv[pushAt + 1]! : "3").split(",").map(Number).filter((n) => n > 0)

const versionMs = (() => {
  const times: Array<number> = []
  for (let i = 0; i < 5; i++) {
    const t0 = performance.now()
    spawnSync(process.execPath, [bin, "--version"])
    times.push(performance.now() - t0)
  }
  return times.sort((a, b) => a - b)[2]!
})()

/** User + system CPU of a running process so far, in seconds. */
const processCpuSeconds = (pid: number): number => cpuMs(pid) / 1000

interface Run {
  readonly agents: number
  /** Push agents beside the `agents` pull agents. */
  readonly push: number
  readonly readyS: number
  readonly attestedS: number
  readonly cpuS: number
}

const runUp = (agents: number, push = 0): Promise<Run> =>
  new Promise((resolve, reject) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "attest-bench-up-"))
    const t0 = performance.now()
    const child = spawn(
      process.execPath,
      [bin, "up", "--agents", String(agents), "--push", String(push), "--data-dir", path.join(dir, ".attest"),
        "--registrar-port", "0", "--registrar-tls-port", "0", "--verifier-port", "0", "--agent-port", "0", "--metrics-port", "0", "--verifier-metrics-port", "0"],
      { stdio: ["ignore", "pipe", "pipe"] }
    )
    let out = ""
    let err = ""
    let readyS = Number.NaN
    let attestedS = Number.NaN
    let cpuS = Number.NaN
    const limit = setTimeout(() => {
      child.kill("SIGINT")
      reject(new Error(`${agents} agents: not all attested within 900 s\n${out.slice(-2000)}\n${err.slice(-2000)}`))
    }, 900_000)
    child.stdout.on("data", (b: Buffer) => {
      out += b.toString()
      if (Number.isNaN(readyS) && /ready: /.test(out)) readyS = (performance.now() - t0) / 1000
      if (Number.isNaN(attestedS) && /all \d+ agents attested/.test(out)) {
        attestedS = (performance.now() - t0) / 1000
        cpuS = processCpuSeconds(child.pid!)
        child.kill("SIGINT")
      }
    })
    child.stderr.on("data", (b: Buffer) => (err += b.toString()))
    child.on("exit", () => {
      clearTimeout(limit)
      fs.rmSync(dir, { recursive: true, force: true })
      if (Number.isNaN(attestedS)) return reject(new Error(`${agents} agents: up ended before all attested\n${out.slice(-2000)}\n${err.slice(-2000)}`))
      resolve({ agents, push, readyS, attestedS, cpuS })
    })
  })

const runs: Array<Run> = []
for (const [n, push] of [...sizes.map((n) => [n, 0] as const), ...pushSizes.map((n) => [n, n] as const)]) {
  const r = await runUp(n, push)
  runs.push(r)
  console.log(
    `${String(n).padStart(4)} agents${push > 0 ? ` + ${push} push` : ""}: enrolled ("ready") ${r.readyS.toFixed(1)} s, all attested ${r.attestedS.toFixed(1)} s, CPU ${r.cpuS.toFixed(1)} s, ` +
      `${(r.attestedS * 1000 / versionMs).toFixed(0)}x attest --version (${versionMs.toFixed(0)} ms)`
  )
}
console.log(`BENCH up_version_baseline_ms ${versionMs.toFixed(0)} ms`)
for (const r of runs) console.log(`BENCH up_all_attested_s_${r.push > 0 ? "push_" : ""}${r.agents} ${r.attestedS.toFixed(2)} s`)
