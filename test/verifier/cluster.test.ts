/**
 * Cluster mode (issue 24) with real processes on real PostgreSQL: two `attest verifier` runners
 * (`cluster = true`, the bundle) on one fresh database share a fleet of simulated pull agents (ECC
 * AKs, in this test process, each recording the IMA offsets it is asked for), quote_interval 2 s.
 * Every agent is polled by one runner (quotes per agent in a window are those of one loop, never two
 * within most of a quote interval of each other; both
 * runners attest some; no runner counts more attestations than the fleet served quotes); after
 * kill -9 of one runner every agent is quoted again within quote_interval * 5, from the IMA offset
 * reached before, and attested by the survivor; the fleet-wide freshness gauge is served. Also:
 * cluster mode on SQLite is refused at start naming the setting, and single-process mode on
 * PostgreSQL creates no cluster table.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, type Scope } from "effect"
import { join } from "node:path"
import { RunningAgent } from "../../src/agent/Agent.js"
import { SimulatedMachine } from "../../src/agent/measurements/SimulatedMachine.js"
import { SqlLive } from "../../src/db/Sql.js"
import { makeTestCa, tempDir } from "../agent/support.js"
import { agentStatus, recordedAgent, verifierAdmin, writeVerifierConfig } from "../faults/support.js"
import { startAttest } from "../support/attestProcess.js"
import { testDatabase } from "../support/db.js"
import { parseExposition, valueOf } from "../support/prometheus.js"
import { needsPostgres } from "../support/requirements.js"
import { freePort } from "../support/swtpm.js"
import { agentBody, machinePolicyBase64, waitFor } from "./pollerSupport.js"

const LISTENING = /attest verifier: API \(HTTPS, mTLS admin\) on (https:\/\/\S+)/
const QUOTE_INTERVAL = 2
const FLEET = 12
/** The failover bound the issue sets: a Keylime-style verifier gives up on an agent after about five missed quotes. */
const FAILOVER_BOUND_MS = QUOTE_INTERVAL * 5 * 1000
const ECC_AK = { alg: "ecc", hash: "sha256", scheme: "ecdsa" } as const
const tools = [{ path: "/usr/bin/tool-before-kill", content: "tool before the kill" }]
const pgOk = await needsPostgres()

const sleep = (ms: number) => Effect.promise(() => new Promise((r) => setTimeout(r, ms)))
const fetchText = (url: string) => Effect.promise(() => fetch(url).then((r) => r.text()))

/** Ports handed out in this file so far: two runners starting at once never get the same one. */
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

/** A fresh PostgreSQL database, a CA, and `attest verifier` runners in cluster mode on them (verifier_id: the runner's name). */
const clusterOn = Effect.gen(function*() {
  const dir = yield* tempDir("attest-cluster-")
  const ca = yield* makeTestCa(join(dir, "cv_ca"))
  const db = yield* testDatabase("pg")
  const admin = verifierAdmin(ca)
  const startRunner = (name: string) =>
    Effect.gen(function*() {
      const [runnerPort, metricsPort] = yield* Effect.promise(() => freshPorts(2))
      const config = writeVerifierConfig(dir, {
        caDir: ca.dir,
        db,
        port: 0,
        metricsPort,
        quoteInterval: QUOTE_INTERVAL,
        name,
        extra: [
          `verifier_id = "${name}"`,
          "request_timeout = 5",
          "cluster = true",
          `cluster_runner_port = ${runnerPort}`,
          "cluster_shards = 60",
          "cluster_health_check_interval = 1",
          "cluster_lock_refresh_interval = 1",
          "cluster_lock_expiration = 4"
        ]
      })
      const run = startAttest(["verifier", "--config", config])
      yield* Effect.addFinalizer(() => Effect.promise(() => run.stop()))
      // a runner that leaves at start: its last words reach us after its exit, so they are read a moment later
      const line = yield* Effect.tryPromise(() => run.waitFor(LISTENING, 120_000)).pipe(
        Effect.catchAll(() =>
          Effect.zipRight(sleep(1000), Effect.dieMessage(`runner ${name} did not start (exit ${run.child.exitCode}, signal ${run.child.signalCode}):\n${run.output()}`))
        )
      )
      const metrics = `http://127.0.0.1:${metricsPort}/metrics`
      return { name, run, url: LISTENING.exec(line.text)![1]!, metrics }
    })
  /** Simulated pull agents with ECC AKs, each recording the IMA offsets it is asked for. */
  const agentsNamed = (ids: ReadonlyArray<string>) =>
    Effect.forEach(ids, (id) =>
      Effect.gen(function*() {
        const recorded = recordedAgent(id, join(dir, id), ca.caPem, { ak: ECC_AK })
        const ctx = yield* Layer.build(recorded.layer)
        return { id, asked: recorded.asked, agent: Context.get(ctx, RunningAgent), machine: Context.get(ctx, SimulatedMachine) }
      }))
  const add = (url: string, a: { readonly id: string; readonly agent: RunningAgent["Type"] }) =>
    Effect.gen(function*() {
      const body = {
        ...agentBody({ port: a.agent.port, akPublic: a.agent.akPublic, serverCert: a.agent.serverCert }, { v: false }),
        runtime_policy: machinePolicyBase64(tools),
        accept_tpm_encryption_algs: ["ecc", "rsa"]
      }
      const added = yield* admin(url, "POST", `/v2.6/agents/${a.id}`, body)
      expect({ agent: a.id, status: added.status }).toEqual({ agent: a.id, status: 200 })
    })
  const status = (url: string, id: string) => agentStatus(admin, url, id)
  return { admin, startRunner, agentsNamed, add, status }
})

/**
 * The two runners one after the other. Started at the same moment, one of them left at start now and
 * then (about one run in four of this file, under load) with no word after its CRL line: not yet
 * understood, so this file does not hide it behind a retry and does not depend on it either.
 */
const startBoth = (c: { readonly startRunner: (name: string) => Effect.Effect<{ readonly url: string; readonly metrics: string; readonly run: ReturnType<typeof startAttest> }, never, Scope.Scope> }) =>
  Effect.all([c.startRunner("r1"), c.startRunner("r2")], { concurrency: 1 })

/** The shortest time between two consecutive quotes asked (ms; Infinity for fewer than two). */
const closest = (asked: ReadonlyArray<{ readonly at: number }>) =>
  asked.slice(1).reduce((min, q, i) => Math.min(min, q.at - asked[i]!.at), Number.POSITIVE_INFINITY)

const pullAttestations = (r: { readonly metrics: string }) =>
  Effect.map(fetchText(r.metrics), (text) => {
    const parsed = parseExposition(text)
    return (valueOf(parsed, "attest_attestations_total", { model: "pull", result: "valid" }) ?? 0) +
      (valueOf(parsed, "attest_attestations_total", { model: "pull", result: "invalid" }) ?? 0)
  })

describe.skipIf(!pgOk)("verifier cluster mode: two runners on one PostgreSQL", () => {
  it.live("every agent is polled by one runner; after kill -9 of one the survivor attests all within quote_interval * 5", () =>
    Effect.gen(function*() {
      const c = yield* clusterOn
      const fleet = yield* c.agentsNamed(Array.from({ length: FLEET }, (_, i) => `cluster-agent-${String(i).padStart(2, "0")}`))
      const [one, two] = yield* startBoth(c)
      // added through either runner (and so with either verifier_id): each agent's loop runs wherever its shard is
      for (const [i, a] of fleet.entries()) yield* c.add(i % 2 === 0 ? one.url : two.url, a)
      const status = c.status
      for (const a of fleet) yield* waitFor(`${a.id} attested twice`, status(two.url, a.id), (s) => s.attestation_count >= 2, 240_000)

      // a window of steady polling: one loop per agent asks once per interval (plus one in flight)
      const windowS = 12
      const askedBefore = fleet.map((a) => a.asked.length)
      const countedBefore = yield* Effect.forEach([one, two], pullAttestations)
      yield* sleep(windowS * 1000)
      const quotes = fleet.map((a, i) => a.asked.length - askedBefore[i]!)
      const counted = (yield* Effect.forEach([one, two], pullAttestations)).map((n, i) => n - countedBefore[i]!)
      for (const [i, a] of fleet.entries()) {
        expect({ agent: a.id, quotesInWindow: quotes[i]! <= windowS / QUOTE_INTERVAL + 2 }).toEqual({ agent: a.id, quotesInWindow: true })
        expect({ agent: a.id, polled: quotes[i]! > 0 }).toEqual({ agent: a.id, polled: true })
        // one loop waits quote_interval after each verdict: two loops would ask at any moment in between
        expect({ agent: a.id, closestQuotesMs: closest(a.asked.slice(askedBefore[i]!)) >= QUOTE_INTERVAL * 1000 * 0.75 })
          .toEqual({ agent: a.id, closestQuotesMs: true })
      }
      // both runners poll a share of the fleet, and together count no more than the fleet answered
      expect({ perRunner: counted, bothAttest: counted.every((n) => n > 0) }).toEqual({ perRunner: counted, bothAttest: true })
      expect(counted[0]! + counted[1]!).toBeLessThanOrEqual(quotes.reduce((s, n) => s + n, 0) + FLEET)

      // the freshness gauge, from the database: the fleet's oldest verified quote is a few intervals old at most
      const oldest = valueOf(parseExposition(yield* fetchText(two.metrics)), "attest_oldest_verified_quote_seconds")
      expect({ oldest: oldest !== undefined && oldest <= 6 * QUOTE_INTERVAL + 10 }).toEqual({ oldest: true })

      // every list grows, then the runner that polls the larger share is killed
      for (const a of fleet) yield* a.machine.measure(tools[0]!.path, tools[0]!.content)
      yield* sleep(2 * QUOTE_INTERVAL * 1000)
      const [doomed, survivor] = counted[0]! >= counted[1]! ? [one, two] : [two, one]
      const reached = fleet.map((a) => Math.max(...a.asked.map((q) => q.entry)))
      const askedAtKill = fleet.map((a) => a.asked.length)
      doomed.run.child.kill("SIGKILL")
      const killedAt = Date.now()
      expect(yield* Effect.promise(() => doomed.run.exited)).toBeNull()

      const resumedAfterMs: Array<number> = []
      for (const [i, a] of fleet.entries()) {
        yield* waitFor(`${a.id} quoted after the kill`, Effect.sync(() => a.asked.length), (n) => n > askedAtKill[i]!, 120_000)
        const first = a.asked[askedAtKill[i]!]!
        resumedAfterMs.push(first.at - killedAt)
        // IMA progress kept: the survivor asks from where the list was, never from entry 0 again
        expect({ agent: a.id, resumedFrom: first.entry >= reached[i]! && first.entry > 0 }).toEqual({ agent: a.id, resumedFrom: true })
      }
      const failoverMs = Math.max(...resumedAfterMs)
      process.stderr.write(`cluster failover: every agent quoted again ${(failoverMs / 1000).toFixed(1)} s after kill -9 (bound ${FAILOVER_BOUND_MS / 1000} s)\n`)
      expect({ failoverMs, withinBound: failoverMs < FAILOVER_BOUND_MS }).toEqual({ failoverMs, withinBound: true })
      for (const a of fleet) {
        const before = (yield* status(survivor.url, a.id)).attestation_count
        const after = yield* waitFor(`${a.id} attested by the survivor`, status(survivor.url, a.id), (s) => s.attestation_count > before, 120_000)
        expect({ agent: a.id, state: after.operational_state }).toEqual({ agent: a.id, state: 3 })
      }

      // the survivor alone: still one loop per agent, and no verdict counted that no quote stands for
      const askedNow = fleet.map((a) => a.asked.length)
      yield* sleep(windowS * 1000)
      for (const [i, a] of fleet.entries()) {
        const n = a.asked.length - askedNow[i]!
        expect({ agent: a.id, quotesInWindow: n > 0 && n <= windowS / QUOTE_INTERVAL + 2 }).toEqual({ agent: a.id, quotesInWindow: true })
        expect({ agent: a.id, closestQuotesMs: closest(a.asked.slice(askedNow[i]!)) >= QUOTE_INTERVAL * 1000 * 0.75 })
          .toEqual({ agent: a.id, closestQuotesMs: true })
        const total = (yield* status(survivor.url, a.id)).attestation_count
        expect({ agent: a.id, doubled: total > a.asked.length }).toEqual({ agent: a.id, doubled: false })
      }
    }).pipe(Effect.scoped), 900_000)

  it.live("stop, reactivate and delete work through either runner, whatever the agent's verifier_id", () =>
    Effect.gen(function*() {
      const c = yield* clusterOn
      const [a, b] = yield* c.agentsNamed(["cluster-admin-a", "cluster-admin-b"])
      const [one, two] = yield* startBoth(c)
      yield* c.add(one.url, a!)
      yield* c.add(one.url, b!)
      for (const x of [a!, b!]) yield* waitFor(`${x.id} attested`, c.status(two.url, x.id), (s) => s.attestation_count >= 1, 240_000)
      const shown = JSON.parse((yield* c.admin(two.url, "GET", `/v2.6/agents/${a!.id}`)).body).results as { verifier_id: string }
      expect(shown.verifier_id).toEqual("r1")

      // stop through r2: polling ends wherever the loop ran (one quote may be in flight)
      expect((yield* c.admin(two.url, "PUT", `/v2.6/agents/${a!.id}/stop`)).status).toEqual(200)
      yield* sleep(QUOTE_INTERVAL * 1000)
      const askedStopped = a!.asked.length
      yield* sleep(3 * QUOTE_INTERVAL * 1000)
      expect({ quotesAfterStop: a!.asked.length - askedStopped <= 1 }).toEqual({ quotesAfterStop: true })
      expect((yield* c.status(one.url, a!.id)).operational_state).toEqual(10)

      // reactivate through r2: polled and attested again
      const counted = (yield* c.status(one.url, a!.id)).attestation_count
      expect((yield* c.admin(two.url, "PUT", `/v2.6/agents/${a!.id}/reactivate`)).status).toEqual(200)
      const again = yield* waitFor("attested after reactivate", c.status(one.url, a!.id), (s) => s.attestation_count > counted, 120_000)
      expect(again.operational_state).toEqual(3)

      // delete through r2: at once when r2 runs its loop, else TERMINATED and the loop's runner deletes it
      const deleted = yield* c.admin(two.url, "DELETE", `/v2.6/agents/${b!.id}`)
      expect([200, 202]).toContain(deleted.status)
      yield* waitFor("the agent gone", Effect.map(c.admin(one.url, "GET", `/v2.6/agents/${b!.id}`), (r) => r.status), (code) => code === 404, 120_000)
      yield* sleep(QUOTE_INTERVAL * 1000)
      const askedGone = b!.asked.length
      yield* sleep(3 * QUOTE_INTERVAL * 1000)
      expect({ quotesAfterDelete: b!.asked.length - askedGone }).toEqual({ quotesAfterDelete: 0 })
    }).pipe(Effect.scoped), 600_000)

  it.live("single-process mode on PostgreSQL creates no cluster table", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("attest-no-cluster-")
      const ca = yield* makeTestCa(join(dir, "cv_ca"))
      const db = yield* testDatabase("pg")
      const run = startAttest(["verifier", "--config", writeVerifierConfig(dir, { caDir: ca.dir, db, port: 0, quoteInterval: QUOTE_INTERVAL })])
      yield* Effect.addFinalizer(() => Effect.promise(() => run.stop()))
      yield* Effect.promise(() => run.waitFor(LISTENING, 120_000))
      const tables = yield* Effect.flatMap(SqlClient.SqlClient, (sql) =>
        sql<{ table_name: string }>`SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()`).pipe(
          Effect.provide(SqlLive(db, "test")),
          Effect.orDie
        )
      const names = tables.map((t) => t.table_name)
      expect(names).toContain("verifier_agents")
      expect(names.filter((n) => n.startsWith("cluster_"))).toEqual([])
    }).pipe(Effect.scoped), 300_000)
})

describe("verifier cluster mode on SQLite", () => {
  it.live("is refused at start, naming the setting", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("attest-cluster-sqlite-")
      const ca = yield* makeTestCa(join(dir, "cv_ca"))
      const db = yield* testDatabase("sqlite")
      const config = writeVerifierConfig(dir, { caDir: ca.dir, db, port: 0, quoteInterval: QUOTE_INTERVAL, extra: ["cluster = true"] })
      const run = startAttest(["verifier", "--config", config])
      yield* Effect.addFinalizer(() => Effect.promise(() => run.stop()))
      const code = yield* Effect.promise(() => run.exited)
      expect(code).not.toEqual(0)
      expect(run.output()).toMatch(/\[verifier\] cluster = true needs a PostgreSQL database_url/)
      expect(run.output()).not.toMatch(LISTENING)
    }).pipe(Effect.scoped), 300_000)
})
