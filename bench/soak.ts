/**
 * The soak: one `attest verifier` process (pull mode, which also serves push agents enrolled with
 * attestation_model "push"; SQLite as `attest up` runs it, or PostgreSQL with --postgres) attests
 * --pull simulated pull agents (bench/_fleet.ts, ECC AKs, one process) and --push push agents
 * (bench/_pushFleet.ts, simulated TPMs, another process) at quote_interval = --interval seconds for
 * --minutes, then (phase 2) as long again with the dashboard open on the fleet (`attest dashboard`
 * and a client that does what its page does; --dashboard-minutes 0 leaves it out). The load
 * generators run in processes of their own, so every figure of the verifier is its own.
 *
 * Read from outside the verifier, never from its own claims: every --check-every seconds, each
 * agent's last verified attestation from the database. A *missed schedule* is one such check of
 * one enrolled agent that is not in the state that attests (pull GET_QUOTE, push accepting) or whose
 * last verified attestation is older than quote_interval + --slack (default 2 s) even at the latest
 * moment its stored time allows (pull: whole seconds). Every minute: the verifier's RSS and open
 * descriptors (/proc), its heap (its /metrics), the database's size (SQLite's pages, or PostgreSQL's
 * pg_total_relation_size of the schema's tables) and the attestations recorded (the database).
 * Baselines in the same run: each phase's figures at its minute 1 (its start if one minute long; phase 1: after a warm-up in
 * which every agent attested twice; phase 2: phase 1's end).
 *
 *   npm run bench -- soak [--minutes 30] [--pull 1000] [--push 200] [--interval 2] [--slack 2]
 *                         [--check-every 2] [--dashboard-minutes <minutes>] [--enrol-concurrency 16] [--postgres]
 *                         [--trace <file>]   (one JSON line per check; BENCH_VERIFIER_LOG=<file> keeps the verifier's output)
 *
 * Enrolment: bench/_soakEnrol.ts (a progress line every 10 s). Every BENCH line states the fleet,
 * the minutes, the database and the load average it was measured at.
 */
import { randomBytes } from "node:crypto"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { createServer } from "node:net"
import { cpus, loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Logger, LogLevel } from "effect"
import pg from "pg"
import { openDashboard } from "./_soakDashboard.js"
import { enrolFleets } from "./_soakEnrol.js"
import { type DbProbe, postgresProbe, sqliteProbe } from "./_soakProbe.js"
import { runPhase, type PhaseResult } from "./_soakPhase.js"
import { spawnVerifier } from "./_verifierProcess.js"
import { postgresUrl } from "../test/support/requirements.js"

const flag = (name: string, fallback: number): number => {
  const i = process.argv.indexOf(`--${name}`)
  if (i < 0) return fallback
  const v = Number(process.argv[i + 1])
  if (!Number.isFinite(v) || v < 0) throw new Error(`--${name} ${process.argv[i + 1]}: not a number of at least 0`)
  return v
}
const MINUTES = flag("minutes", 30)
const PULL = flag("pull", 1000)
const PUSH = flag("push", 200)
const INTERVAL = flag("interval", 2)
const SLACK = flag("slack", 2)
const CHECK_EVERY = flag("check-every", 2)
const DASHBOARD_MINUTES = flag("dashboard-minutes", MINUTES)
const ENROL_CONCURRENCY = Math.max(1, flag("enrol-concurrency", 16))
const POSTGRES = process.argv.includes("--postgres")
/** --trace <file>: one JSON line per check (bench/_soakPhase.ts), to place a minute's misses. */
const TRACE = process.argv.includes("--trace") ? process.argv[process.argv.indexOf("--trace") + 1] : undefined
/** The push agents' AKs (seeded simulated TPMs), kept between runs as a fleet's agents keep theirs: a first run derives them. */
const PUSH_STATE = "node_modules/.cache/attest-soak/push-agents"

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port
      s.close(() => resolve(port))
    })
  })

/** A PostgreSQL schema of its own for the run (dropped at the end) and the URL whose connections use it. */
const postgresSchema = Effect.acquireRelease(
  Effect.promise(async () => {
    const schema = `soak_${randomBytes(4).toString("hex")}`
    const client = new pg.Client({ connectionString: postgresUrl })
    await client.connect()
    await client.query(`CREATE SCHEMA ${schema}`)
    await client.end()
    const url = new URL(postgresUrl)
    url.searchParams.set("options", `-c search_path=${schema}`)
    return { schema, url: url.toString() }
  }),
  ({ schema }) =>
    Effect.promise(async () => {
      const client = new pg.Client({ connectionString: postgresUrl })
      await client.connect()
      await client.query(`DROP SCHEMA ${schema} CASCADE`)
      await client.end()
    })
)

const program = Effect.gen(function*() {
  const dir = mkdtempSync(join(tmpdir(), "attest-soak-"))
  yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
  const caDir = join(dir, "ca")
  const dataDir = join(dir, "data")
  const metricsPort = yield* Effect.promise(freePort)
  const database = POSTGRES ? yield* postgresSchema : undefined
  const config = join(dir, "verifier.toml")
  writeFileSync(config, [
    "[verifier]", "port = 0", `tls_dir = "generate"`, `ca_dir = "${caDir}"`, `data_dir = "${dataDir}"`, `metrics_port = ${metricsPort}`,
    `log_level = "warning"`, `quote_interval = ${INTERVAL}`, `mode = "pull"`,
    // every push agent comes from 127.0.0.1 here, where a fleet's come from as many addresses
    `session_create_rate_limit_per_ip = ${Math.max(50, 2 * PUSH)}`, ...(database === undefined ? [] : [`database_url = "${database.url}"`]), ""
  ].join("\n"))
  console.log(`soak: ${PULL} pull + ${PUSH} push agents, quote_interval ${INTERVAL} s, ${MINUTES} min${DASHBOARD_MINUTES > 0 ? ` + ${DASHBOARD_MINUTES} min with the dashboard` : ""}, ${POSTGRES ? "PostgreSQL" : "SQLite"}, ${cpus().length} cores`)
  // BENCH_SOAK_PROF_DIR=<dir>: a CPU profile of the verifier, written when it exits
  const prof = process.env["BENCH_SOAK_PROF_DIR"]
  const verifier = yield* spawnVerifier(config, caDir, prof === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${prof}`])
  const db: DbProbe = database === undefined ? sqliteProbe(join(dataDir, "verifier.sqlite")) : postgresProbe(database.url, database.schema)
  yield* Effect.addFinalizer(() => Effect.promise(db.close))
  const { fleet, pushPid, pushReady, seconds: enrolSeconds } = yield* enrolFleets({ verifier, caDir, pushStateDir: PUSH_STATE, pull: PULL, push: PUSH, interval: INTERVAL, concurrency: ENROL_CONCURRENCY, db })
  // warm-up: every agent attested twice (connections made, whole IMA lists behind), at most 3 minutes
  const warm = Date.now()
  for (;;) {
    const counts = yield* Effect.promise(() => db.agents())
    const rows = yield* Effect.promise(() => db.attestations())
    const ready = counts.filter((a) => a.lastSuccessMs > 0).length
    const done = ready >= PULL + PUSH && rows.pull >= 2 * PULL && rows.push >= 2 * PUSH
    if (done || Date.now() - warm > 180_000) {
      console.log(`warm-up: ${((Date.now() - warm) / 1000).toFixed(0)} s${done ? "" : `, ended at its bound: ${ready}/${PULL + PUSH} agents attested, ${rows.pull} pull and ${rows.push} push attestations`}`)
      break
    }
    yield* Effect.sleep("1 second")
  }

  const limitMs = (INTERVAL + SLACK) * 1000
  console.log(`a missed schedule: an agent not attesting, or its last verified attestation older than ${INTERVAL} + ${SLACK} s, at a check every ${CHECK_EVERY} s`)
  const common = { traceFile: TRACE, verifierPid: verifier.pid, metricsUrl: `http://127.0.0.1:${metricsPort}/metrics`, db, limitMs, checkEveryMs: CHECK_EVERY * 1000, loadPids: [fleet.pid, ...(pushPid === undefined ? [] : [pushPid])], expectedAgents: PULL + PUSH }
  const plain = yield* runPhase({ ...common, name: "soak", minutes: MINUTES })
  const withDashboard = DASHBOARD_MINUTES === 0 ? undefined : yield* Effect.scoped(Effect.gen(function*() {
    const dashboard = yield* openDashboard({ dir, caDir, verifierUrl: verifier.url, agentIds: fleet.agents.map((a) => a.id) })
    console.log(`dashboard: ${dashboard.url} (process ${dashboard.pid}), a client on its live events and pages`)
    const result = yield* runPhase({ ...common, name: "dashboard", minutes: DASHBOARD_MINUTES, dashboard })
    console.log(`dashboard client: ${dashboard.stats.events} live events, ${dashboard.stats.requests} requests, ${dashboard.stats.errors} failed${dashboard.stats.errors > 0 ? ` (last: ${dashboard.stats.lastError})` : ""}`)
    return result
  }))

  // every figure says what it was measured on: a run of 300 agents for 5 minutes is not the issue's 1,200 for 30
  const on = (minutes: number) => `(${PULL} pull + ${PUSH} push agents${pushReady < PUSH ? `, ${pushReady} push attesting` : ""}, quote_interval ${INTERVAL} s, ${minutes} min, ${POSTGRES ? "PostgreSQL" : "SQLite"}, load average ${loadavg()[0]!.toFixed(1)})`
  const report = (suffix: string, r: PhaseResult, minutes: number) => {
    console.log(`BENCH soak_missed_schedules${suffix} ${r.missed} agent-checks ${on(minutes)}`)
    console.log(`BENCH soak_rss_growth_ratio${suffix} ${r.rssGrowthRatio.toFixed(3)} x ${on(minutes)}`)
    if (r.heapGrowthRatio !== undefined) console.log(`BENCH soak_heap_growth_ratio${suffix} ${r.heapGrowthRatio.toFixed(3)} x ${on(minutes)}`)
    console.log(`BENCH soak_fd_growth${suffix} ${r.fdGrowth} fds ${on(minutes)}`)
    console.log(`BENCH soak_db_bytes_per_attestation${suffix} ${r.dbBytesPerAttestation.toFixed(0)} B ${on(minutes)}`)
    console.log(`BENCH soak_attestations_per_s${suffix} ${r.attestationsPerS.toFixed(1)} 1/s ${on(minutes)}`)
    console.log(`BENCH soak_verifier_cpu_pct${suffix} ${r.verifierCpuPct.toFixed(0)} % ${on(minutes)}`)
    console.log(`BENCH soak_load_generators_cpu_pct${suffix} ${r.loadCpuPct.toFixed(0)} % ${on(minutes)}`)
  }
  console.log(`BENCH soak_enrol_seconds ${enrolSeconds.toFixed(0)} s (${PULL} pull + ${pushReady} push agents, ${ENROL_CONCURRENCY} at a time)`)
  report("", plain, MINUTES)
  if (withDashboard !== undefined) report("_dashboard", withDashboard, DASHBOARD_MINUTES)
})

Effect.runPromise(program.pipe(Effect.scoped, Logger.withMinimumLogLevel(LogLevel.Warning))).then(
  () => process.exit(0),
  (e) => {
    console.error(e)
    process.exit(1)
  }
)
