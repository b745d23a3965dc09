/**
 * The pull figure for bench/push-fleet.ts, measured the same way in the same run: a second
 * `attest verifier` process (pull mode, SQLite, quote_interval 2 s, the same CA) polls N simulated
 * agents of bench/_fleet.ts (a separate process; the shared 100,000-digest runtime policy, 3 new
 * IMA entries per quote), enrolled over v2. After a warm-up (every agent attested twice), the
 * verifier's CPU from /proc over the window / the attestations it recorded (read from its SQLite
 * file, so counting costs it nothing).
 */
import { spawn } from "node:child_process"
import { createRequire } from "node:module"
import { readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Effect } from "effect"
import { makeRuntimePolicy } from "../schemas/RuntimePolicy.js"
import { rawRequest } from "../src/http/client.js"
import { CA_FILES } from "../src/pki/layout.js"
import { fleetAgentBody, fleetPolicyFile, POLICY_FILES } from "./_fleet.js"

// better-sqlite3 (under @effect/sql-sqlite-node) has no types here: the two calls used
interface ReadOnlyDb {
  prepare(sql: string): { all(): Array<unknown> }
  close(): void
}
const Database = createRequire(import.meta.url)("better-sqlite3") as new (file: string, options: object) => ReadOnlyDb

const cpuMs = (pid: number): number => {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")
  return (Number(fields[11]) + Number(fields[12])) * 10
}
/** Kernel (system) CPU ms of `pid`: syscalls, TLS sockets, SQLite's writes and syncs. */
const sysMs = (pid: number): number => Number(readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")[12]) * 10

const childUntil = <A>(args: ReadonlyArray<string>, ready: (out: string) => A | undefined) =>
  Effect.acquireRelease(
    Effect.async<{ value: A; pid: number; kill: () => void }>((resume) => {
      const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "inherit"] })
      let out = ""
      let done = false
      child.stdout.on("data", (d: Buffer) => {
        out += d.toString()
        const v = done ? undefined : ready(out)
        if (v !== undefined) {
          done = true
          resume(Effect.succeed({ value: v, pid: child.pid!, kill: () => child.kill("SIGKILL") }))
        }
      })
      child.once("exit", (code) => {
        if (!done) resume(Effect.dieMessage(`${args.join(" ")} exited (${code}): ${out.slice(-2000)}`))
      })
    }),
    (c) => Effect.sync(c.kill)
  )

export interface PullFigure {
  readonly cpuMsPerAttestation: number
  /** Of which in the kernel. */
  readonly sysMsPerAttestation: number
  readonly attestations: number
  readonly seconds: number
  readonly onSchedule: number
}

export const pullPhase = (o: { readonly agents: number; readonly seconds: number; readonly settleSeconds: number; readonly dir: string; readonly caDir: string }) =>
  Effect.scoped(Effect.gen(function*() {
    const fleet = yield* childUntil(["--import", "tsx", "bench/_fleet.ts", String(o.agents), o.caDir], (out) => {
      const line = out.split("\n").find((l) => l.startsWith("{"))
      return line === undefined || !out.includes(line + "\n") ? undefined : (JSON.parse(line) as { agents: Array<{ id: string; port: number; ak: string }>; cert: string })
    })
    const dataDir = join(o.dir, "pull-data")
    const config = join(o.dir, "pull.toml")
    writeFileSync(config, ["[verifier]", "port = 0", `tls_dir = "generate"`, `ca_dir = "${o.caDir}"`, `data_dir = "${dataDir}"`, "metrics_port = 0", `log_level = "warning"`, "quote_interval = 2", ""].join("\n"))
    const verifier = yield* childUntil(["--import", "tsx", "src/cli/bin.ts", "verifier", "--config", config], (out) => /attest verifier: API \(HTTPS, mTLS admin\) on (https:\/\/\S+)/.exec(out)?.[1])
    const url = verifier.value
    const read = (f: string) => readFileSync(join(o.caDir, f), "utf8")
    const admin = { ca: read(CA_FILES.caCert), cert: read(CA_FILES.clientCert), key: read(CA_FILES.clientKey) }
    const send = (method: string, path: string, body: unknown) =>
      rawRequest({ method, baseUrl: url, path, tls: admin, body: JSON.stringify(body), headers: { "content-type": "application/json" } }).pipe(Effect.orDie)

    const digests: Record<string, Array<string>> = {}
    for (let i = 0; i < POLICY_FILES; i++) {
      const f = fleetPolicyFile(i)
      digests[f.path] = [Buffer.from(f.digest).toString("hex")]
    }
    const policy = JSON.stringify(makeRuntimePolicy({ digests, excludes: ["boot_aggregate"] }))
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
    const warm = Date.now()
    while ([...counts().values()].filter((c) => c >= 2).length < o.agents && Date.now() - warm < 60_000) yield* Effect.sleep("500 millis")
    // the same steady state as the push phase before it is measured
    yield* Effect.sleep(`${o.settleSeconds} seconds`)
    const before = counts()
    const cpu0 = cpuMs(verifier.pid)
    const sys0 = sysMs(verifier.pid)
    const t0 = performance.now()
    yield* Effect.sleep(`${o.seconds} seconds`)
    const cpu = cpuMs(verifier.pid) - cpu0
    const sys = sysMs(verifier.pid) - sys0
    const seconds = (performance.now() - t0) / 1000
    const after = counts()
    let total = 0
    let onSchedule = 0
    for (const [id, c] of after) {
      const d = c - (before.get(id) ?? 0)
      total += d
      if (d >= Math.floor((o.seconds / 2) * 0.8)) onSchedule++
    }
    return { cpuMsPerAttestation: cpu / Math.max(1, total), sysMsPerAttestation: sys / Math.max(1, total), attestations: total, seconds, onSchedule } satisfies PullFigure
  }))
