/**
 * Cluster mode (issue 24) against its baseline in the same run, on one PostgreSQL: a simulated fleet
 * of N pull agents in a process of its own (bench/_fleet.ts: RSA and ECC AKs, the shared
 * 100,000-digest runtime policy, 3 new IMA entries per quote), quote_interval 2 s, attested by
 *   single   one `attest verifier` process in single-process mode (the baseline),
 *   1 runner one process with `cluster = true`,
 *   1 runner unbatched  the same with `database_write_batch_window = 0` (each loop write its own
 *            transaction: the baseline of the batching),
 *   1 runner one process with `cluster = true`,
 *   2 runners two processes with `cluster = true` (their CPU summed),
 *   3 runners three processes with `cluster = true`,
 * each on a fresh database. Per phase, over a window after a warm-up (every agent attested twice): the
 * processes' CPU from /proc per attestation (attestation_count read from the database, so counting
 * costs the verifiers nothing), the agents on schedule (80% of the quotes the window allows), the
 * loop writes and the transactions that stored them per runner (each runner's /metrics:
 * attest_verdict_writes_total, attest_db_transactions_total{purpose="loop_writes"}) and how busy the
 * machine's cores were (/proc/stat: what limits the phase on a small machine). After the 2-runner
 * window, kill -9 of one of the two runners: the seconds until every agent has a quote received
 * after the kill (last_received_quote, whole seconds), with the runners' failure detection as the
 * defaults of `[verifier] cluster_*`.
 *
 *   npm run bench -- cluster-fleet [agents, default 100] [window seconds, default 20]
 *   CLUSTER_FLEET_AB=1 npm run bench -- cluster-fleet   (only 1 runner unbatched / batched, alternated twice)
 *   CLUSTER_FLEET_PHASES=single,2 …   only those phases (single, unbatched, 1, 2, 3)
 *   CLUSTER_FLEET_LOG=info …           the runners log at that level; the survivor's log is written to ./cluster-fleet-survivor.log
 *   BENCH_PROF_DIR=<dir> …             a CPU profile of each verifier; read with bench/_profileSummary.ts
 * PostgreSQL: ATTEST_TEST_PG_URL or postgres://postgres@127.0.0.1:5432/test (a database per phase).
 */
import { spawn } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { Effect } from "effect"
import Pg from "pg"
import { makeRuntimePolicy } from "../schemas/RuntimePolicy.js"
import { rawRequest } from "../src/http/client.js"
import { CA_FILES } from "../src/pki/layout.js"
import { postgresUrl } from "../test/support/requirements.js"
import { withSearchPath } from "../test/support/db.js"
import { freePort } from "../test/support/swtpm.js"
import { fleetAgentBody, fleetPolicyFile, POLICY_FILES } from "./_fleet.js"
import { cpuMs } from "./_procCpu.js"
import { attestCommand } from "./_verifierCommand.js"

const AGENTS = Number(process.argv[2] ?? 100)
const WINDOW_S = Number(process.argv[3] ?? 20)
const QUOTE_INTERVAL = 2
const ON_SCHEDULE = 0.8
/** The batch window of the batched phases (the option's default is 0: off). */
const BATCH_WINDOW = Number(process.env["CLUSTER_FLEET_BATCH_WINDOW"] ?? 0.1)
/** BENCH_PROF_DIR=<dir>: a CPU profile of every verifier (<phase>-<n>.cpuprofile), its window printed in the profile's clock. */
const PROF_DIR = process.env["BENCH_PROF_DIR"]
/** CLUSTER_FLEET_PHASES=single,1,2: only those phases (while developing); every one by default. */
const PHASES = new Set((process.env["CLUSTER_FLEET_PHASES"] ?? "single,unbatched,1,2,3").split(","))
/** CLUSTER_FLEET_LOG=info: the runners log at that level, and the survivor's log after the kill is written to <dir>/survivor.log. */
const LOG_LEVEL = process.env["CLUSTER_FLEET_LOG"] ?? "warning"
const monotonicUs = () => Number(process.hrtime.bigint() / 1000n)

const dir = mkdtempSync(join(tmpdir(), "attest-bench-cluster-"))
const caDir = join(dir, "ca")
const sleep = (ms: number) => Effect.promise(() => new Promise((r) => setTimeout(r, ms)))
const admin = new Pg.Pool({ connectionString: postgresUrl, max: 1 })

interface Child {
  readonly pid: number
  /** The process's /metrics URL (verifiers). */
  readonly metrics?: string
  readonly out: () => string
  /** The process's CPU ms so far (/proc). */
  readonly cpu: () => number
  readonly kill: (signal: NodeJS.Signals) => Promise<void>
}

/**
 * A child process until `ready` reads its output; stopped when the scope closes (SIGKILL, or SIGINT
 * for a profiled one, so it writes its profile).
 */
const childUntil = <A>(args: ReadonlyArray<string>, ready: (out: string) => A | undefined, env: Record<string, string> = {}, stop: NodeJS.Signals = "SIGKILL") =>
  Effect.acquireRelease(
    Effect.async<{ value: A } & Child>((resume) => {
      const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "inherit"], env: { ...process.env, ...env } })
      let out = ""
      let done = false
      const exited = new Promise<void>((r) => child.once("exit", () => r()))
      child.stdout.on("data", (d: Buffer) => {
        out += d.toString()
        const v = done ? undefined : ready(out)
        if (v !== undefined) {
          done = true
          resume(Effect.succeed({ value: v, pid: child.pid!, out: () => out, cpu: () => cpuMs(child.pid!), kill: (signal) => (child.kill(signal), Promise.race([exited, new Promise<void>((r) => setTimeout(r, 10_000))])) }))
        }
      })
      child.once("exit", (code) => {
        if (!done) resume(Effect.dieMessage(`${args.join(" ")} exited (${code}): ${out.slice(-2000)}`))
      })
    }),
    (c) => Effect.promise(() => c.kill(stop))
  )

/**
 * A fresh database on the PostgreSQL server (its URL), dropped when the scope closes: a database,
 * not a schema, since the engine's shard locks are advisory locks, which belong to a database.
 */
const freshDatabase = Effect.acquireRelease(
  Effect.promise(async () => {
    const name = `b_cluster_${Math.random().toString(36).slice(2, 10)}`
    await admin.query(`CREATE DATABASE ${name}`)
    return name
  }),
  (name) => Effect.promise(() => admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`))
).pipe(Effect.map((name) => {
  const url = new URL(postgresUrl)
  url.pathname = `/${name}`
  return withSearchPath(url.toString(), "public")
}))

const startVerifier = (name: string, databaseUrl: string, cluster: boolean, batchWindow?: number) =>
  Effect.gen(function*() {
    const config = join(dir, `${name}.toml`)
    const runnerPort = yield* Effect.promise(freePort)
    // metrics_port 0 turns the listener off: a free port, read back from the process's output
    const metricsPort = yield* Effect.promise(freePort)
    writeFileSync(config, [
      "[verifier]",
      "port = 0",
      `tls_dir = "generate"`,
      `ca_dir = "${caDir}"`,
      `data_dir = "${join(dir, name)}"`,
      `database_url = "${databaseUrl}"`,
      `metrics_port = ${metricsPort}`,
      `log_level = "${LOG_LEVEL}"`,
      `quote_interval = ${QUOTE_INTERVAL}`,
      "enabled_revocation_notifications = []",
      `verifier_id = "${name}"`,
      ...(cluster ? ["cluster = true", `cluster_runner_port = ${runnerPort}`] : []),
      ...(batchWindow === undefined ? [] : [`database_write_batch_window = ${batchWindow}`]),
      ""
    ].join("\n"))
    const profile = PROF_DIR === undefined || name === "ca" ? [] : ["--cpu-prof", `--cpu-prof-dir=${PROF_DIR}`, `--cpu-prof-name=${name}.cpuprofile`]
    const child = yield* childUntil([...profile, ...attestCommand(["verifier", "--config", config])], (out) => {
      const api = /attest verifier: API \(HTTPS, mTLS admin\) on (https:\/\/\S+)/.exec(out)?.[1]
      const metrics = /attest verifier: metrics \(Prometheus\) on (\S+)/.exec(out)?.[1]
      return api === undefined || metrics === undefined ? undefined : { api, metrics }
    }, {}, profile.length > 0 ? "SIGINT" : "SIGKILL")
    return { ...child, url: child.value.api, metrics: child.value.metrics, runner: `127.0.0.1:${runnerPort}` }
  })

type Fleet = { readonly agents: ReadonlyArray<{ id: string; port: number; ak: string }>; readonly cert: string }

const policyBody = (() => {
  const digests: Record<string, Array<string>> = {}
  for (let i = 0; i < POLICY_FILES; i++) {
    const f = fleetPolicyFile(i)
    digests[f.path] = [Buffer.from(f.digest).toString("hex")]
  }
  return { runtime_policy: Buffer.from(JSON.stringify(makeRuntimePolicy({ digests, excludes: ["boot_aggregate"] }))).toString("base64") }
})()

const enrol = (url: string, fleet: Fleet) =>
  Effect.gen(function*() {
    const read = (f: string) => readFileSync(join(caDir, f), "utf8")
    const tls = { ca: read(CA_FILES.caCert), cert: read(CA_FILES.clientCert), key: read(CA_FILES.clientKey) }
    const send = (method: string, path: string, body: unknown) =>
      rawRequest({ method, baseUrl: url, path, tls, body: JSON.stringify(body), headers: { "content-type": "application/json" } }).pipe(Effect.orDie)
    const added = yield* send("POST", "/v2.6/allowlists/fleet", policyBody)
    if (added.status !== 201 && added.status !== 200) return yield* Effect.dieMessage(`policy: ${added.status} ${added.body}`)
    // a few at once: one after the other, 300 agents took minutes on a loaded machine
    yield* Effect.forEach(fleet.agents, (a) =>
      Effect.flatMap(send("POST", `/v2.6/agents/${a.id}`, fleetAgentBody(a, fleet.cert)), (r) =>
        r.status === 200 ? Effect.void : Effect.dieMessage(`enrolment of ${a.id}: ${r.status} ${r.body}`)), { concurrency: 8, discard: true })
  })

const rowsOf = (db: Pg.Pool) =>
  Effect.promise(async () => {
    const r = await db.query(`SELECT agent_id, attestation_count, last_received_quote FROM verifier_agents`)
    return r.rows.map((row: { agent_id: string; attestation_count: string; last_received_quote: string }) => ({
      id: row.agent_id,
      count: Number(row.attestation_count),
      lastQuote: Number(row.last_received_quote)
    }))
  })

/** The engine's state as the database holds it: runners its registry holds healthy, advisory (shard) locks held. */
const engineView = (db: Pg.Pool) =>
  Effect.promise(async () => {
    const healthy = await db.query(`SELECT COUNT(*) AS n FROM cluster_runners WHERE healthy`)
    const locks = await db.query(`SELECT COUNT(*) AS n FROM pg_locks l JOIN pg_database d ON d.oid = l.database
      WHERE l.locktype = 'advisory' AND l.granted AND d.datname = current_database()`)
    return { healthy: Number(healthy.rows[0].n), locks: Number(locks.rows[0].n) }
  })

/** A process's loop writes and the transactions that stored them, from its /metrics. */
const dbCounters = (metricsUrl: string | undefined) =>
  Effect.promise(async () => {
    if (metricsUrl === undefined) return { writes: 0, transactions: 0 }
    const text = await (await fetch(metricsUrl)).text()
    const sum = (re: RegExp) => [...text.matchAll(re)].reduce((s, m) => s + Number(m[1]), 0)
    return {
      writes: sum(/^attest_verdict_writes_total\{[^}]*\} (\S+)$/gm),
      transactions: sum(/^attest_db_transactions_total\{purpose="loop_writes"\} (\S+)$/gm)
    }
  })

/**
 * Every transaction committed in the phase's database (reads too: each statement outside a
 * transaction is one) and the rows written, from pg_stat_database: what the runners, the engine
 * (shard locks, heartbeats, stored messages) and the loops cost PostgreSQL together. Backends report
 * them about once a second (idle ones within 10 s), so the figure over a window is approximate.
 */
const databaseCounters = (db: Pg.Pool) =>
  Effect.promise(async () => {
    const r = await db.query(
      `SELECT xact_commit + xact_rollback AS tx, tup_inserted + tup_updated + tup_deleted AS rows FROM pg_stat_database WHERE datname = current_database()`
    )
    return { tx: Number(r.rows[0].tx), rows: Number(r.rows[0].rows) }
  })

/** The machine's busy and total CPU ms over every core (/proc/stat). */
const machineCpu = () => {
  const f = readFileSync("/proc/stat", "utf8").split("\n")[0]!.trim().split(/\s+/).slice(1).map(Number)
  const total = f.reduce((s, x) => s + x, 0)
  return { busy: total - f[3]! - (f[4] ?? 0), total }
}

interface Figure {
  readonly cpuMsPerAttestation: number
  readonly attestations: number
  readonly onSchedule: number
  /** Per runner per second, and transactions per attestation (all runners). */
  readonly writesPerS: number
  readonly txPerS: number
  readonly txPerAttestation: number
  /** Share of the machine's CPU busy in the window (every process on it). */
  readonly machineBusy: number
  /** Every transaction in the phase's database, and the rows written, per attestation (databaseCounters). */
  readonly dbTxPerAttestation: number
  readonly dbRowsPerAttestation: number
}

/** Warm-up, then the window: CPU of `pids` per attestation and agents on schedule. */
const measure = (db: Pg.Pool, processes: ReadonlyArray<Child>) =>
  Effect.gen(function*() {
    const from = Date.now()
    while ((yield* rowsOf(db)).filter((r) => r.count >= 2).length < AGENTS && Date.now() - from < 180_000) yield* sleep(500)
    const before = new Map((yield* rowsOf(db)).map((r) => [r.id, r.count]))
    const pids = processes.map((p) => p.pid)
    const db0 = yield* Effect.forEach(processes, (p) => dbCounters(p.metrics))
    const machine0 = machineCpu()
    const database0 = yield* databaseCounters(db)
    const cpu0 = pids.map(cpuMs)
    const t0 = performance.now()
    const us0 = monotonicUs()
    yield* sleep(WINDOW_S * 1000)
    if (PROF_DIR !== undefined) console.log(`profile window (monotonic µs): ${us0} ${monotonicUs()}`)
    const cpu = pids.map(cpuMs).reduce((s, c, i) => s + c - cpu0[i]!, 0)
    const seconds = (performance.now() - t0) / 1000
    const machine1 = machineCpu()
    const database1 = yield* databaseCounters(db)
    const db1 = yield* Effect.forEach(processes, (p) => dbCounters(p.metrics))
    const writes = db1.reduce((s, d, i) => s + d.writes - db0[i]!.writes, 0)
    const transactions = db1.reduce((s, d, i) => s + d.transactions - db0[i]!.transactions, 0)
    let attestations = 0
    let onSchedule = 0
    for (const r of yield* rowsOf(db)) {
      const d = r.count - (before.get(r.id) ?? 0)
      attestations += d
      if (d >= Math.floor((seconds / QUOTE_INTERVAL) * ON_SCHEDULE)) onSchedule++
    }
    return {
      cpuMsPerAttestation: cpu / Math.max(1, attestations),
      attestations,
      onSchedule,
      writesPerS: writes / seconds / processes.length,
      txPerS: transactions / seconds / processes.length,
      txPerAttestation: transactions / Math.max(1, attestations),
      machineBusy: (machine1.busy - machine0.busy) / Math.max(1, machine1.total - machine0.total),
      dbTxPerAttestation: (database1.tx - database0.tx) / Math.max(1, attestations),
      dbRowsPerAttestation: (database1.rows - database0.rows) / Math.max(1, attestations)
    } satisfies Figure
  })

/** One phase: `runners` verifier processes (cluster mode unless `single`) on a fresh database. */
const phase = (
  label: string,
  runners: number,
  cluster: boolean,
  fleet: Fleet,
  after?: (ctx: { db: Pg.Pool; processes: ReadonlyArray<Child & { readonly runner: string }> }) => Effect.Effect<void>,
  batchWindow?: number
) =>
  Effect.scoped(Effect.gen(function*() {
    const url = yield* freshDatabase
    // the phase's own database, read directly (the verifiers are not asked: counting costs them nothing)
    const db = yield* Effect.acquireRelease(Effect.sync(() => new Pg.Pool({ connectionString: url, max: 1 })), (p) => Effect.promise(() => p.end()))
    const processes = []
    for (let i = 0; i < runners; i++) processes.push(yield* startVerifier(`${label.replace(/\s+/g, "-")}-${i + 1}`, url, cluster, batchWindow ?? BATCH_WINDOW))
    // an enrolment that fails says what the verifier logged (its log is kept, at log_level)
    const enrolling = processes[0]!
    yield* enrol(enrolling.url, fleet).pipe(
      Effect.onExit((exit) => exit._tag === "Failure" ? Effect.sync(() => console.error(`the enrolling verifier's log, last lines:\n${enrolling.out().slice(-6000)}`)) : Effect.void)
    )
    const figure = yield* measure(db, processes)
    console.log(
      `${label.padEnd(18)} ${figure.cpuMsPerAttestation.toFixed(2)} ms CPU per attestation (${figure.attestations} in ${WINDOW_S} s), ${figure.onSchedule}/${AGENTS} agents on schedule; ` +
        `per runner ${figure.writesPerS.toFixed(1)} loop writes/s in ${figure.txPerS.toFixed(1)} transactions/s (${figure.txPerAttestation.toFixed(3)} per attestation); ` +
        `the database: ${figure.dbTxPerAttestation.toFixed(2)} transactions (reads included) and ${figure.dbRowsPerAttestation.toFixed(2)} rows written per attestation; ` +
        `machine ${(figure.machineBusy * 100).toFixed(0)}% busy, load ${loadavg().map((l) => l.toFixed(1)).join(" ")}`
    )
    if (after !== undefined) yield* after({ db, processes })
    return figure
  }))

/** kill -9 of the last runner: seconds until every agent has a quote received after it. */
const failover = (ctx: { db: Pg.Pool; processes: ReadonlyArray<Child & { readonly runner: string }> }) =>
  Effect.gen(function*() {
    const doomed = ctx.processes[ctx.processes.length - 1]!
    const survivor = ctx.processes[0]!
    // the survivor's steady CPU rate before the kill: what it spends on its own agents, subtracted
    // from its CPU during the takeover to leave what taking over the dead runner's agents cost
    const steady0 = survivor.cpu()
    const steadyT0 = performance.now()
    yield* sleep(STEADY_S * 1000)
    const steadyMsPerS = (survivor.cpu() - steady0) / ((performance.now() - steadyT0) / 1000)
    const orphans = yield* ownedBy(ctx.db, doomed.runner)
    const cpu0 = survivor.cpu()
    const us0 = monotonicUs()
    yield* Effect.promise(() => doomed.kill("SIGKILL"))
    const killedAt = Date.now()
    const killedAtS = Math.floor(killedAt / 1000)
    // where the seconds go: the registry's view of the dead runner, the shard locks held, the agents
    // quoted again (a line whenever one of them changes)
    let said = ""
    for (;;) {
      const rows = yield* rowsOf(ctx.db)
      const engine = yield* engineView(ctx.db)
      const requoted = rows.filter((r) => r.lastQuote > killedAtS).length
      const line = `healthy runners ${engine.healthy}, shard locks ${engine.locks}, agents quoted again ${requoted}/${rows.length}`
      if (line !== said) console.log(`failover   +${((Date.now() - killedAt) / 1000).toFixed(2)} s: ${line}`)
      said = line
      if (rows.every((r) => r.lastQuote > killedAtS)) break
      if (Date.now() - killedAt > 300_000) return yield* Effect.dieMessage("agents not attested again within 300 s of the kill")
      yield* sleep(250)
    }
    const seconds = (Date.now() - killedAt) / 1000
    const takeoverMs = survivor.cpu() - cpu0
    const extraMs = takeoverMs - steadyMsPerS * seconds
    if (PROF_DIR !== undefined) console.log(`takeover window (monotonic µs): ${us0} ${monotonicUs()}`)
    console.log(
      `failover   survivor CPU ${takeoverMs.toFixed(0)} ms in ${seconds.toFixed(1)} s (steady ${steadyMsPerS.toFixed(0)} ms/s before the kill): ` +
        `${extraMs.toFixed(0)} ms beyond its steady rate for ${orphans} agents taken over = ${(extraMs / Math.max(1, orphans)).toFixed(2)} ms each`
    )
    takeoverMsPerAgent = extraMs / Math.max(1, orphans)
    if (process.env["CLUSTER_FLEET_LOG"] !== undefined) {
      const survivorLog = join(process.cwd(), "cluster-fleet-survivor.log")
      writeFileSync(survivorLog, `killed at ${new Date(killedAt).toISOString()}\n${ctx.processes[0]!.out()}`)
      console.log(`failover   the survivor's log: ${survivorLog}`)
    }
    console.log(`failover   every agent quoted again ${seconds.toFixed(1)} s after kill -9 of one of two runners (bound quote_interval * 5 = ${QUOTE_INTERVAL * 5} s)`)
    failoverSeconds = seconds
  })

let failoverSeconds = Number.NaN
let takeoverMsPerAgent = Number.NaN
/** Seconds of the survivor's steady CPU measured before the kill. */
const STEADY_S = 5

/** Active agents whose loop last ran on `runner` (owner_runner). */
const ownedBy = (db: Pg.Pool, runner: string) =>
  Effect.promise(async () => Number((await db.query(`SELECT COUNT(*) AS n FROM verifier_agents WHERE owner_runner = $1`, [runner])).rows[0].n))

const main = Effect.gen(function*() {
  console.log(`cluster-fleet: ${AGENTS} agents, quote_interval ${QUOTE_INTERVAL} s, window ${WINDOW_S} s, load ${loadavg().map((l) => l.toFixed(1)).join(" ")}`)
  // the CA first (the first verifier generates it), then the fleet that trusts it
  const fleetProcess = yield* Effect.scoped(Effect.gen(function*() {
    yield* startVerifier("ca", yield* freshDatabase, false)
  })).pipe(Effect.zipRight(childUntil(["--import", "tsx", "bench/_fleet.ts", String(AGENTS), caDir], (out) => {
    const line = out.split("\n").find((l) => l.startsWith("{"))
    return line === undefined || !out.includes(line + "\n") ? undefined : (JSON.parse(line) as Fleet)
  }, { FLEET_AK: "ecc" })))
  const fleet = fleetProcess.value
  if (process.env["CLUSTER_FLEET_AB"] === "1") {
    // the batching alone, alternated (a shared machine's load moves between phases): 1 runner unbatched, batched, twice
    for (let round = 1; round <= 2; round++) {
      const off = yield* phase(`unbatched ${round}`, 1, true, fleet, undefined, 0)
      const on = yield* phase(`batched ${round}`, 1, true, fleet)
      console.log(`round ${round}: CPU per attestation batched / unbatched ${(on.cpuMsPerAttestation / off.cpuMsPerAttestation).toFixed(2)}`)
    }
    return
  }
  const run = (key: string, go: () => Effect.Effect<Figure, never, never>) => (PHASES.has(key) ? Effect.map(go(), (f) => f as Figure | undefined) : Effect.succeed(undefined))
  const single = yield* run("single", () => phase("single", 1, false, fleet))
  const unbatched = yield* run("unbatched", () => phase("1 runner unbatched", 1, true, fleet, undefined, 0))
  const one = yield* run("1", () => phase("1 runner", 1, true, fleet))
  const two = yield* run("2", () => phase("2 runners", 2, true, fleet, failover))
  const three = yield* run("3", () => phase("3 runners", 3, true, fleet))
  const ratio = (f: Figure | undefined) => (f === undefined || single === undefined ? Number.NaN : f.cpuMsPerAttestation / single.cpuMsPerAttestation)
  const tx = (f: Figure | undefined) => (f === undefined ? "-" : f.txPerAttestation.toFixed(3))
  console.log(`ratio to single-process mode (same run, same fleet): 1 runner ${ratio(one).toFixed(2)}, 2 runners ${ratio(two).toFixed(2)}, 3 runners ${ratio(three).toFixed(2)} (target <= 1.2)`)
  console.log(
    `loop-write transactions per attestation: unbatched ${tx(unbatched)}, batched 1 runner ${tx(one)}, 2 runners ${tx(two)}, 3 runners ${tx(three)} (target <= 0.1)` +
      (one !== undefined && unbatched !== undefined ? `; CPU per attestation batched / unbatched (1 runner) ${(one.cpuMsPerAttestation / unbatched.cpuMsPerAttestation).toFixed(2)}` : "")
  )
  if (one !== undefined) console.log(`BENCH cluster_agents_on_schedule_1 ${one.onSchedule}`)
  if (two !== undefined) console.log(`BENCH cluster_agents_on_schedule_2 ${two.onSchedule}`)
  if (three !== undefined) console.log(`BENCH cluster_agents_on_schedule_3 ${three.onSchedule}`)
  if (two !== undefined) console.log(`BENCH cluster_db_tx_per_attestation ${two.txPerAttestation.toFixed(3)}`)
  if (two !== undefined && single !== undefined) console.log(`BENCH cluster_cpu_ratio_to_single ${ratio(two).toFixed(3)}`)
  if (two !== undefined) console.log(`BENCH cluster_failover_s ${failoverSeconds.toFixed(1)} s`)
  if (two !== undefined) console.log(`BENCH cluster_takeover_cpu_ms_per_agent ${takeoverMsPerAgent.toFixed(2)} ms`)
}).pipe(Effect.scoped)

Effect.runPromise(main).then(
  () => admin.end().finally(() => rmSync(dir, { recursive: true, force: true })),
  (e) => {
    console.error(e)
    void admin.end()
    rmSync(dir, { recursive: true, force: true })
    process.exit(1)
  }
)
