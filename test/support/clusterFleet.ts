/**
 * What the cluster-mode suites share (issue 24, issue 26): `attest verifier` runners in cluster mode
 * (real child processes, the bundle) on one fresh PostgreSQL database, a fleet of simulated pull
 * agents in this process whose machines record every IMA offset they are asked for, and the reads
 * the assertions need: the agents' rows straight from the database, each runner's pull-attestation
 * counter, and the spacing of the quotes each agent served.
 *
 * A fleet is cheap to make: ECC AK and EK, and the first agent's NK and server certificate copied
 * into every other agent's data directory before it starts (the agent loads them, as after a
 * restart), so 50 agents cost no 100 RSA key generations.
 */
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { expect } from "@effect/vitest"
import { Context, Effect, Layer, Redacted, type Scope } from "effect"
import { copyFileSync, mkdirSync } from "node:fs"
import { spawn } from "node:child_process"
import * as net from "node:net"
import { join } from "node:path"
import { RunningAgent } from "../../src/agent/Agent.js"
import { SimulatedMachine } from "../../src/agent/measurements/SimulatedMachine.js"
import { NK_FILE } from "../../src/agent/nkStore.js"
import { CERT_FILE, KEY_FILE } from "../../src/agent/tls.js"
import { type DatabaseOptions, SqlLive } from "../../src/db/Sql.js"
import { makeTestCa, tempDir } from "../agent/support.js"
import { agentStatus, recordedAgent, verifierAdmin, writeVerifierConfig } from "../faults/support.js"
import { agentBody, machinePolicyBase64 } from "../verifier/pollerSupport.js"
import { type AttestProcess, startAttest } from "./attestProcess.js"
import { withSearchPath } from "./db.js"
import { postgresUrl } from "./requirements.js"
import { parseExposition, valueOf } from "./prometheus.js"
import { freePort } from "./swtpm.js"

export const LISTENING = /attest verifier: API \(HTTPS, mTLS admin\) on (https:\/\/\S+)/
const ECC_AK = { alg: "ecc", hash: "sha256", scheme: "ecdsa" } as const

export const sleep = (ms: number) => Effect.promise(() => new Promise((r) => setTimeout(r, ms)))
const fetchText = (url: string) => Effect.promise(() => fetch(url).then((r) => r.text()))

/** Ports handed out in this process so far: two runners never get the same one. */
const handedOut = new Set<number>()
const freshPorts = async (n: number) => {
  const ports: Array<number> = []
  while (ports.length < n) {
    const port = await freePort()
    if (handedOut.has(port)) continue
    handedOut.add(port)
    ports.push(port)
  }
  return ports
}

export interface Runner {
  readonly name: string
  readonly run: AttestProcess
  readonly url: string
  readonly metrics: string
}

export interface FleetAgent {
  readonly id: string
  /** (wall clock, IMA offset) of every quote this agent served. */
  readonly asked: Array<{ readonly at: number; readonly entry: number }>
  readonly agent: RunningAgent["Type"]
  readonly machine: SimulatedMachine["Type"]
}

export interface AgentRow {
  readonly agent_id: string
  readonly attestation_count: number
  readonly operational_state: number
}

const adminStatement = (statement: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(statement)).pipe(
    Effect.provide(PgClient.layer({ url: Redacted.make(postgresUrl), maxConnections: 1 })),
    Effect.orDie
  )

/**
 * A database of its own, not a schema of the shared one: PostgreSQL's advisory locks belong to a
 * database, and the engine keys its shard locks by shard number alone, so two clusters in two
 * schemas of one database (two cluster test files at once) took each other's shards and left
 * agents unpolled and sends waiting for minutes.
 */
const clusterDatabase = Effect.acquireRelease(
  Effect.sync(() => `h_cluster_${Math.random().toString(36).slice(2, 10)}`).pipe(Effect.tap((name) => adminStatement(`CREATE DATABASE ${name}`))),
  (name) => adminStatement(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
)

/** A cluster's database of its own (see clusterDatabase), as the options a verifier is given; dropped with the scope. */
export const clusterDatabaseOptions = Effect.map(clusterDatabase, (name): DatabaseOptions => {
  const url = new URL(postgresUrl)
  url.pathname = `/${name}`
  return { database_url: withSearchPath(url.toString(), "public"), data_dir: "" }
})

/** `db` reached through a relay listening on `port` of 127.0.0.1. */
export const throughPort = (db: DatabaseOptions, port: number): DatabaseOptions => {
  const url = new URL(db.database_url)
  url.port = String(port)
  return { ...db, database_url: url.toString() }
}

/**
 * A fresh PostgreSQL database and CA, and a way to start `attest verifier` runners in cluster mode
 * on them (verifier_id: the runner's name; the cluster's timings at their defaults: health checks
 * every second, shard locks refreshed every 2 s and lost after 6 s; a 1 s refresh on a loaded
 * 2-core machine timed out now and then, and each time the runner let go of all its shards). `runnerDb` is the database the runners are given (a relay in front of
 * it, say); the test reads the database itself directly.
 */
export const clusterOn = (o: {
  readonly quoteInterval: number
  readonly extra?: ReadonlyArray<string>
  readonly runnerDb?: (db: DatabaseOptions) => DatabaseOptions
  /** What the agents' runtime policy allows beside the machine's own files. */
  readonly allowed?: ReadonlyArray<{ readonly path: string; readonly content: string }>
}) =>
  Effect.gen(function*() {
    const dir = yield* tempDir("attest-cluster-")
    const ca = yield* makeTestCa(join(dir, "cv_ca"))
    const db = yield* clusterDatabaseOptions
    const sql = Context.get(yield* Layer.build(Layer.orDie(SqlLive(db, "test"))), SqlClient.SqlClient)
    const admin = verifierAdmin(ca)
    const runnerDb = o.runnerDb === undefined ? db : o.runnerDb(db)

    const startRunner = (name: string, env: Readonly<Record<string, string>> = {}): Effect.Effect<Runner, never, Scope.Scope> =>
      Effect.gen(function*() {
        const [runnerPort, metricsPort] = yield* Effect.promise(() => freshPorts(2))
        const config = writeVerifierConfig(dir, {
          caDir: ca.dir,
          db: runnerDb,
          port: 0,
          metricsPort,
          quoteInterval: o.quoteInterval,
          name,
          extra: [
            `verifier_id = "${name}"`,
            "request_timeout = 5",
            "cluster = true",
            `cluster_runner_port = ${runnerPort}`,
            "cluster_shards = 60",
            ...(o.extra ?? [])
          ]
        })
        const run = startAttest(["verifier", "--config", config], { env })
        yield* Effect.addFinalizer(() => Effect.promise(() => run.stop()))
        // a runner that leaves at start: its last words reach us after its exit, so they are read a moment later
        const line = yield* Effect.tryPromise(() => run.waitFor(LISTENING, 120_000)).pipe(
          Effect.catchAll(() =>
            Effect.zipRight(sleep(1000), Effect.dieMessage(`runner ${name} did not start (exit ${run.child.exitCode}, signal ${run.child.signalCode}):\n${run.output()}`))
          )
        )
        return { name, run, url: LISTENING.exec(line.text)![1]!, metrics: `http://127.0.0.1:${metricsPort}/metrics` }
      })

    /** Simulated pull agents (ECC keys; one NK and one server certificate shared through their data directories). */
    const agentsNamed = (ids: ReadonlyArray<string>) =>
      Effect.gen(function*() {
        const make = (id: string) =>
          Effect.gen(function*() {
            const recorded = recordedAgent(id, join(dir, id), ca.caPem, { ak: ECC_AK, ekAlg: "ecc" })
            const ctx = yield* Layer.build(recorded.layer)
            return { id, asked: recorded.asked, agent: Context.get(ctx, RunningAgent), machine: Context.get(ctx, SimulatedMachine) } satisfies FleetAgent
          })
        const first = yield* make(ids[0]!)
        for (const id of ids.slice(1)) {
          mkdirSync(join(dir, id), { recursive: true })
          for (const f of [NK_FILE, CERT_FILE, KEY_FILE]) copyFileSync(join(dir, ids[0]!, f), join(dir, id, f))
        }
        const rest = yield* Effect.forEach(ids.slice(1), make, { concurrency: 4 })
        return [first, ...rest]
      })

    const add = (url: string, a: FleetAgent, body: Record<string, unknown> = {}) =>
      Effect.gen(function*() {
        const added = yield* admin(url, "POST", `/v2.6/agents/${a.id}`, {
          ...agentBody({ port: a.agent.port, akPublic: a.agent.akPublic, serverCert: a.agent.serverCert }, { v: false }),
          runtime_policy: machinePolicyBase64(o.allowed ?? []),
          accept_tpm_encryption_algs: ["ecc", "rsa"],
          ...body
        })
        expect({ agent: a.id, status: added.status, body: added.status === 200 ? "" : added.body }).toEqual({ agent: a.id, status: 200, body: "" })
      })

    /** Every agent's row, by id, straight from the database. */
    const rows = Effect.map(
      Effect.orDie(sql<{ agent_id: string; attestation_count: unknown; operational_state: unknown }>`
        SELECT agent_id, attestation_count, operational_state FROM verifier_agents`),
      (rs) => new Map(rs.map((r): [string, AgentRow] => [r.agent_id, { agent_id: r.agent_id, attestation_count: Number(r.attestation_count), operational_state: Number(r.operational_state) }]))
    )
    const status = (url: string, id: string) => agentStatus(admin, url, id)
    return { dir, ca, db, sql, admin, startRunner, agentsNamed, add, rows, status }
  })

/** A runner's pull attestations (valid and invalid) so far, from its metrics listener. */
export const pullAttestations = (r: Runner) =>
  Effect.map(fetchText(r.metrics), (text) => {
    const parsed = parseExposition(text)
    return (valueOf(parsed, "attest_attestations_total", { model: "pull", result: "valid" }) ?? 0) +
      (valueOf(parsed, "attest_attestations_total", { model: "pull", result: "invalid" }) ?? 0)
  })

/** The shortest time between two consecutive quotes served (ms; Infinity for fewer than two). */
export const closest = (asked: ReadonlyArray<{ readonly at: number }>) =>
  asked.slice(1).reduce((min, q, i) => Math.min(min, q.at - asked[i]!.at), Number.POSITIVE_INFINITY)

/** The longest time without a quote served from `from` to `to` (ms). */
export const longestGap = (asked: ReadonlyArray<{ readonly at: number }>, from: number, to: number) => {
  const times = [from, ...asked.map((q) => q.at).filter((t) => t > from && t < to), to]
  return times.slice(1).reduce((max, t, i) => Math.max(max, t - times[i]!), 0)
}

/**
 * Each agent's verdicts (its row) and the quotes it served, each runner's counter, and the sum of all
 * rows' verdicts read just before and just after the counters (they cannot be read at one instant).
 * The quotes are read last: every verdict counted so far stands for a quote already served.
 */
export const snapshot = (fleet: ReadonlyArray<FleetAgent>, runners: ReadonlyArray<Runner>, rows: Effect.Effect<Map<string, AgentRow>>) =>
  Effect.gen(function*() {
    const sum = (byId: Map<string, AgentRow>) => [...byId.values()].reduce((s, r) => s + r.attestation_count, 0)
    const before = yield* rows
    const counted = yield* Effect.forEach(runners, pullAttestations, { concurrency: "unbounded" })
    const after = yield* rows
    return {
      counts: fleet.map((a) => before.get(a.id)?.attestation_count ?? 0),
      total: { before: sum(before), after: sum(after) },
      counted,
      asked: fleet.map((a) => a.asked.length),
      at: Date.now()
    }
  })
export type Snapshot = Effect.Effect.Success<ReturnType<typeof snapshot>>

/**
 * Between two snapshots: every agent quoted at least once and at most once per interval (one loop:
 * two loops would ask at any moment in between); no agent with more verdicts than quotes it served;
 * the runners' counters together grew as all rows' verdicts (each verdict counted by one runner,
 * once; a few may land while the counters are read). Returns each runner's share.
 */
export const expectOneLoopEach = (fleet: ReadonlyArray<FleetAgent>, a: Snapshot, b: Snapshot, quoteIntervalS: number) => {
  const seconds = (b.at - a.at) / 1000
  for (const [i, agent] of fleet.entries()) {
    const quotes = b.asked[i]! - a.asked[i]!
    expect({ agent: agent.id, quotes, polled: quotes > 0, atMostOnePerInterval: quotes <= seconds / quoteIntervalS + 2 })
      .toEqual({ agent: agent.id, quotes, polled: true, atMostOnePerInterval: true })
    expect({ agent: agent.id, closestQuotesMs: closest(agent.asked.slice(a.asked[i]!, b.asked[i]!)) >= quoteIntervalS * 1000 * 0.75 })
      .toEqual({ agent: agent.id, closestQuotesMs: true })
    expect({ agent: agent.id, verdicts: b.counts[i]!, served: b.asked[i]!, doubled: b.counts[i]! > b.asked[i]! })
      .toEqual({ agent: agent.id, verdicts: b.counts[i]!, served: b.asked[i]!, doubled: false })
  }
  const counted = b.counted.reduce((s, n, i) => s + n - a.counted[i]!, 0)
  const least = b.total.before - a.total.after - 3
  const most = b.total.after - a.total.before + 3
  expect({ counted, least, most, onceEach: counted >= least && counted <= most }).toEqual({ counted, least, most, onceEach: true })
  return b.counted.map((n, i) => n - a.counted[i]!)
}

const waitUntil = <A>(read: Effect.Effect<A>, ok: (a: A) => boolean, ms: number): Effect.Effect<A, string> =>
  Effect.gen(function*() {
    const deadline = Date.now() + ms
    for (;;) {
      const a = yield* read
      if (ok(a)) return a
      if (Date.now() > deadline) return yield* Effect.fail("timed out")
      yield* sleep(250)
    }
  })

/** On failure, what each runner said that was not INFO, then its last lines (most of a cluster failure's story). */
export const tellRunnersOnFailure = (runners: () => ReadonlyArray<Runner>, lines = 40) => <A, E, R>(self: Effect.Effect<A, E, R>) =>
  Effect.onExit(self, (exit) =>
    exit._tag === "Success" ? Effect.void : Effect.sync(() => {
      for (const r of runners()) {
        const notInfo = r.run.lines.filter((l) => !/\bINFO\b|level=INFO/.test(l.text)).slice(-60)
        process.stderr.write(`--- runner ${r.name} (exit ${r.run.child.exitCode}): not INFO (last 60):\n${notInfo.map((l) => l.text.slice(0, 500)).join("\n")}\n--- last ${lines} lines:\n${r.run.lines.slice(-lines).map((l) => l.text.slice(0, 300)).join("\n")}\n`)
      }
    }))

/** How often each runner said its shard-lock storage was unhealthy (it then lets go of all its shards). */
export const lockTrouble = (runners: ReadonlyArray<Runner>) =>
  Object.fromEntries(runners.map((r) => [r.name, r.run.lines.filter((l) => l.text.includes("Shard lock storage is unhealthy")).length]))

/**
 * What stands in front of a cluster's REST API in a deployment (a load balancer): a TCP relay on
 * 127.0.0.1 to one runner's API port, moved to another runner when that one dies (its connections
 * are cut, as a balancer's health check would). TLS passes through: the client talks to the runner.
 */
export const frontDoor = Effect.acquireRelease(
  Effect.promise(() =>
    new Promise<{ readonly url: string; readonly to: (runnerUrl: string) => void; readonly close: () => void }>((resolve) => {
      let target = 0
      const open = new Set<net.Socket>()
      const server = net.createServer((client) => {
        const upstream = net.connect({ host: "127.0.0.1", port: target })
        open.add(client).add(upstream)
        const cut = () => (client.destroy(), upstream.destroy(), open.delete(client), open.delete(upstream))
        client.pipe(upstream).pipe(client)
        for (const s of [client, upstream]) s.on("error", cut).on("close", cut)
      })
      server.listen(0, "127.0.0.1", () =>
        resolve({
          url: `https://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
          to: (runnerUrl) => {
            target = Number(new URL(runnerUrl).port)
            for (const s of open) s.destroy()
          },
          close: () => (server.close(), [...open].forEach((s) => s.destroy()))
        })
      )
    })
  ),
  (door) => Effect.sync(door.close)
)

/**
 * Each agent's quotes served but not judged, once every agent has at most `allowed[i]` of them
 * (waited for up to a minute; the assertion names the agents still short).
 */
export const unjudged = (fleet: ReadonlyArray<FleetAgent>, b: Snapshot, rows: Effect.Effect<Map<string, AgentRow>>, allowed: ReadonlyArray<number>) =>
  Effect.gen(function*() {
    const missing = (r: Map<string, AgentRow>) => fleet.map((a, i) => b.asked[i]! - r.get(a.id)!.attestation_count)
    const byId = yield* Effect.either(waitUntil(rows, (r) => missing(r).every((m, i) => m <= allowed[i]!), 60_000))
    const now = missing(byId._tag === "Right" ? byId.right : yield* rows)
    const short = fleet.flatMap((a, i) => now[i]! > allowed[i]! ? [{ agent: a.id, served: b.asked[i]!, unjudged: now[i]!, allowed: allowed[i]! }] : [])
    expect({ unjudgedBeyondAllowed: short }).toEqual({ unjudgedBeyondAllowed: [] })
    return now
  })

/** The relay of databaseRelay, run as a process of its own: stdin lines `refuse`, `accept`, `peak` (answered `peak <n>`). */
const RELAY_SCRIPT = `
const net = require("node:net")
const [host, port] = [process.argv[1], Number(process.argv[2])]
const open = new Set()
let refusing = false, peak = 0
const server = net.createServer((client) => {
  if (refusing) return client.destroy()
  const upstream = net.connect({ host, port })
  open.add(client)
  peak = Math.max(peak, open.size)
  const cut = () => (open.delete(client), client.destroy(), upstream.destroy())
  client.pipe(upstream).pipe(client)
  for (const s of [client, upstream]) s.on("error", cut).on("close", cut)
})
server.listen(0, "127.0.0.1", () => console.log("port " + server.address().port))
let buffered = ""
process.stdin.on("data", (d) => {
  buffered += d
  const lines = buffered.split("\\n")
  buffered = lines.pop()
  for (const l of lines) {
    if (l === "refuse") { refusing = true; for (const s of [...open]) s.destroy() }
    if (l === "accept") refusing = false
    if (l === "peak") console.log("peak " + peak)
  }
})
process.stdin.on("end", () => process.exit(0))
`

/**
 * A TCP relay to PostgreSQL in a process of its own (as test/support/tcpProxy.ts, whose relay runs
 * in the test's process: there, 50 simulated agents' work delayed the runners' every statement and
 * their shard-lock refreshes timed out): `refuse()` cuts every connection and every new one (the
 * database is down), `accept()` relays again, `peak` the most connections ever open at once.
 */
export const databaseRelay = Effect.acquireRelease(
  Effect.promise(() => {
    const target = new URL(postgresUrl)
    const child = spawn(process.execPath, ["-e", RELAY_SCRIPT, target.hostname, target.port || "5432"], { stdio: ["pipe", "pipe", "inherit"] })
    const waiting: Array<(line: string) => void> = []
    let buffered = ""
    child.stdout.on("data", (d: Buffer) => {
      buffered += d.toString("utf8")
      const lines = buffered.split("\n")
      buffered = lines.pop() ?? ""
      for (const l of lines) waiting.shift()?.(l)
    })
    const next = () => new Promise<string>((r) => waiting.push(r))
    return next().then((line) => ({
      port: Number(line.split(" ")[1]),
      refuse: () => void child.stdin.write("refuse\n"),
      accept: () => void child.stdin.write("accept\n"),
      peak: Effect.promise(() => {
        const answer = next()
        child.stdin.write("peak\n")
        return answer.then((l) => Number(l.split(" ")[1]))
      }),
      close: () => new Promise<void>((r) => child.exitCode !== null || child.signalCode !== null ? r() : (child.once("exit", () => r()), child.kill("SIGKILL")))
    }))
  }),
  (relay) => Effect.promise(relay.close)
)
