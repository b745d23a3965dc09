/**
 * The pull figure for bench/push-fleet.ts, measured the same way over the same window: a second
 * `attest verifier` process (pull mode, SQLite, quote_interval 2 s, the same CA) polls N simulated
 * agents of bench/_fleet.ts (a separate process; the shared 100,000-digest runtime policy, 3 new
 * IMA entries per quote), enrolled over v2. After a warm-up (every agent attested twice), the
 * verifier's CPU from /proc over the window / the attestations it recorded (read from its SQLite
 * file, so counting costs it nothing).
 */
import { spawn } from "node:child_process"
import { verifierNodeArgs } from "./_verifierProcess.js"
import { createRequire } from "node:module"
import { readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Effect, Schedule } from "effect"
import { rawRequest } from "../src/http/client.js"
import { CA_FILES } from "../src/pki/layout.js"
import { fleetAgentBody, fleetRuntimePolicy } from "./_fleet.js"
import { attestCommand } from "./_verifierCommand.js"
import { cpuMs, sysMs, threadCpuMs, threadSplit } from "./_procCpu.js"

// better-sqlite3 (under @effect/sql-sqlite-node) has no types here: the two calls used
interface ReadOnlyDb {
  prepare(sql: string): { all(): Array<unknown> }
  close(): void
}
const Database = createRequire(import.meta.url)("better-sqlite3") as new (file: string, options: object) => ReadOnlyDb

/** A child process until `ready` reads its output; stopped by `signal` (SIGINT lets a profiled one write its profile: awaited up to 10 s). */
export const childUntil = <A>(args: ReadonlyArray<string>, ready: (out: string) => A | undefined, signal: NodeJS.Signals = "SIGKILL", env?: NodeJS.ProcessEnv) =>
  Effect.acquireRelease(
    Effect.async<{ value: A; pid: number; kill: () => Promise<void> }>((resume) => {
      const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "inherit"], ...(env === undefined ? {} : { env: { ...process.env, ...env } }) })
      let out = ""
      let done = false
      child.stdout.on("data", (d: Buffer) => {
        if (done) return
        out += d.toString()
        const v = ready(out)
        if (v !== undefined) {
          done = true
          const exited = new Promise<void>((r) => child.once("exit", () => r()))
          resume(Effect.succeed({ value: v, pid: child.pid!, kill: () => (child.kill(signal), Promise.race([exited, new Promise<void>((r) => setTimeout(r, 10_000))])) }))
        }
      })
      child.once("exit", (code) => {
        if (!done) resume(Effect.dieMessage(`${args.join(" ")} exited (${code}): ${out.slice(-2000)}`))
      })
    }),
    (c) => Effect.promise(c.kill)
  )

export interface PullFigure {
  readonly cpuMsPerAttestation: number
  /** Of which in the kernel. */
  readonly sysMsPerAttestation: number
  /** CPU ms per attestation by thread. */
  readonly threads: string
  readonly attestations: number
  readonly seconds: number
  readonly onSchedule: number
}

/** A window's opening reading of the pull verifier (see `startPull`). */
export interface PullReading {
  readonly counts: Map<string, number>
  readonly cpu: number
  readonly sys: number
  readonly threads: Map<string, number>
  readonly at: number
}

/**
 * The pull side, started and enrolled in the caller's scope; it runs beside the push fleet, so both
 * verifiers are measured over the same window on the same (possibly busy) machine: `warm` waits
 * until every pull agent attested twice, `begin` and `end` read the window's ends.
 */
export const startPull = (o: {
  readonly agents: number
  readonly dir: string
  readonly caDir: string
  readonly extraConfig?: ReadonlyArray<string>
  /** Runs with the verifier and the fleet up, before the policy and the agents are added (bench/verifier-fleet.ts: idle CPU, the floor). */
  readonly beforeEnrol?: (started: { readonly pid: number; readonly fleet: { readonly agents: ReadonlyArray<{ readonly port: number }>; readonly cert: string } }) => Effect.Effect<void>
}) =>
  Effect.gen(function*() {
    const dataDir = join(o.dir, "pull-data")
    const config = join(o.dir, "pull.toml")
    writeFileSync(config, ["[verifier]", "port = 0", `tls_dir = "generate"`, `ca_dir = "${o.caDir}"`, `data_dir = "${dataDir}"`, "metrics_port = 0", `log_level = "warning"`, "quote_interval = 2", ...(o.extraConfig ?? []), ""].join("\n"))
    // BENCH_PULL_PROF_DIR=<dir>: a CPU profile of the pull verifier too (written when it exits)
    const prof = process.env["BENCH_PULL_PROF_DIR"]
    const verifier = yield* childUntil([...verifierNodeArgs(), ...(prof === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${prof}`]), ...attestCommand(["verifier", "--config", config])], (out) => /attest verifier: API \(HTTPS, mTLS admin\) on (https:\/\/\S+)/.exec(out)?.[1], prof === undefined ? "SIGKILL" : "SIGINT")
    // the fleet after the verifier: its agents trust the CA the verifier generates when none is there yet
    const fleet = yield* childUntil(["--import", "tsx", "bench/_fleet.ts", String(o.agents), o.caDir], (out) => {
      const line = out.split("\n").find((l) => l.startsWith("{"))
      return line === undefined || !out.includes(line + "\n") ? undefined : (JSON.parse(line) as { agents: Array<{ id: string; port: number; ak: string }>; cert: string })
    })
    const url = verifier.value
    const read = (f: string) => readFileSync(join(o.caDir, f), "utf8")
    const admin = { ca: read(CA_FILES.caCert), cert: read(CA_FILES.clientCert), key: read(CA_FILES.clientKey) }
    const send = (method: string, path: string, body: unknown) =>
      // a kept-alive connection the loaded verifier closed as the request went out (ECONNRESET) is tried again
      rawRequest({ method, baseUrl: url, path, tls: admin, body: JSON.stringify(body), headers: { "content-type": "application/json" } }).pipe(
        Effect.retry({ times: 3, schedule: Schedule.spaced("1 second") }),
        Effect.orDie
      )

    if (o.beforeEnrol !== undefined) yield* o.beforeEnrol({ pid: verifier.pid, fleet: fleet.value })
    const policy = JSON.stringify(fleetRuntimePolicy())
    const added = yield* send("POST", "/v2.6/allowlists/fleet", { runtime_policy: Buffer.from(policy).toString("base64") })
    if (added.status !== 201 && added.status !== 200) return yield* Effect.dieMessage(`pull policy: ${added.status} ${added.body}`)
    for (const a of fleet.value.agents) {
      const r = yield* send("POST", `/v2.6/agents/${a.id}`, fleetAgentBody(a, fleet.value.cert))
      if (r.status !== 200) return yield* Effect.dieMessage(`pull enrolment of ${a.id}: ${r.status} ${r.body}`)
    }

    const db = new Database(join(dataDir, "verifier.sqlite"), { readonly: true, fileMustExist: true })
    yield* Effect.addFinalizer(() => Effect.sync(() => db.close()))
    const counts = () =>
      new Map((db.prepare("SELECT agent_id, attestation_count FROM verifier_agents").all() as Array<{ agent_id: string; attestation_count: number }>).map((r) => [r.agent_id, Number(r.attestation_count)]))
    const warm = Effect.gen(function*() {
      const from = Date.now()
      while ([...counts().values()].filter((c) => c >= 2).length < o.agents && Date.now() - from < 60_000) yield* Effect.sleep("500 millis")
    })
    const begin = (): PullReading => ({ counts: counts(), cpu: cpuMs(verifier.pid), sys: sysMs(verifier.pid), threads: threadCpuMs(verifier.pid), at: performance.now() })
    const end = (r: PullReading): PullFigure => {
      const cpu = cpuMs(verifier.pid) - r.cpu
      const sys = sysMs(verifier.pid) - r.sys
      const threads = threadCpuMs(verifier.pid)
      const seconds = (performance.now() - r.at) / 1000
      let total = 0
      let onSchedule = 0
      for (const [id, c] of counts()) {
        const d = c - (r.counts.get(id) ?? 0)
        total += d
        if (d >= Math.floor((seconds / 2) * 0.8)) onSchedule++
      }
      return { cpuMsPerAttestation: cpu / Math.max(1, total), sysMsPerAttestation: sys / Math.max(1, total), threads: threadSplit(r.threads, threads, total), attestations: total, seconds, onSchedule }
    }
    return { warm, begin, end, url, admin, pid: verifier.pid } as const
  })
