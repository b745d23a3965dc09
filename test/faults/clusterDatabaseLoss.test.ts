/**
 * PostgreSQL lost and back under two cluster-mode runners that are attesting (issue 24, issue 26):
 * the runners reach the database through a TCP relay that cuts every connection and refuses new
 * ones for longer than the shard locks last (as a restart of PostgreSQL looks from the runners;
 * the test's own reads go around it), while clients keep asking both runners' REST API.
 * Meanwhile every answer is 200 or 503 with Retry-After, never 500; the runners recover by
 * themselves (no restart, both still running); every agent is attested again, none marked failed
 * because the database was away; afterwards one loop per agent and each verdict counted once; the
 * runners together never held more connections than their two pools' bound.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { type AgentRow, clusterOn, expectOneLoopEach, type Runner, sleep, snapshot, tellRunnersOnFailure, throughPort } from "../support/clusterFleet.js"
import { needsPostgres, postgresUrl } from "../support/requirements.js"
import { startTcpProxy } from "../support/tcpProxy.js"
import { waitFor } from "../verifier/pollerSupport.js"

const pgOk = await needsPostgres()
const QUOTE_INTERVAL = 2
const FLEET = 10
/** Longer than cluster_lock_expiration (4 s), several quote intervals, and the loop's retry budget. */
const OUTAGE_MS = 10_000
/** The pg pool's bound per process (src/db/Sql.ts). */
const POOL_MAX = 10

describe.skipIf(!pgOk)("cluster mode: PostgreSQL lost and back under two runners", () => {
  it.live("503 with Retry-After meanwhile, never 500; the runners recover by themselves; nothing failed, lost or doubled", () =>
    Effect.gen(function*() {
      const relay = yield* Effect.acquireRelease(
        Effect.promise(() => {
          const target = new URL(postgresUrl)
          return startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) })
        }),
        (p) => Effect.promise(() => p.close())
      )
      const c = yield* clusterOn({
        quoteInterval: QUOTE_INTERVAL,
        runnerDb: (db) => throughPort(db, relay.port),
        extra: ["retry_interval = 1", "exponential_backoff = false", "max_retries = 3"]
      })
      const fleet = yield* c.agentsNamed(Array.from({ length: FLEET }, (_, i) => `cluster-dbloss-${String(i).padStart(2, "0")}`))
      // one after the other: the known start defect of issue 24's first slice
      const r1 = yield* c.startRunner("r1")
      const r2 = yield* c.startRunner("r2")
      const runners: ReadonlyArray<Runner> = [r1, r2]
      for (const [i, a] of fleet.entries()) yield* c.add(runners[i % 2]!.url, a)
      yield* waitFor("every agent attested twice", c.rows, (byId) => fleet.every((a) => (byId.get(a.id)?.attestation_count ?? 0) >= 2), 240_000)

      // clients of both runners' API all along: what each answer was, and a 503's Retry-After
      const answers = new Map<string, number>()
      const ask = (r: Runner, path: string) =>
        Effect.map(c.admin(r.url, "GET", path), (res) => {
          const key = `${res.status}${res.status === 503 ? ` retry-after=${res.headers["retry-after"]}` : ""}`
          answers.set(key, (answers.get(key) ?? 0) + 1)
        })
      const clients = yield* Effect.fork(Effect.forever(Effect.zipRight(
        Effect.forEach(runners, (r) => Effect.zip(ask(r, "/v2.6/agents/"), ask(r, `/v2.6/agents/${fleet[0]!.id}`)), { concurrency: "unbounded" }),
        sleep(200)
      )))

      relay.refuse()
      yield* sleep(OUTAGE_MS)
      const outage = new Map(answers)
      relay.accept()
      const back = yield* c.rows
      const since = (byId: Map<string, AgentRow>) => fleet.map((a) => [a.id, byId.get(a.id)!.attestation_count - back.get(a.id)!.attestation_count, byId.get(a.id)!.operational_state])
      yield* waitFor("every agent attested again", Effect.map(c.rows, since), (s) => s.every(([, n]) => Number(n) >= 2), 90_000).pipe(
        tellRunnersOnFailure(() => runners)
      )
      yield* Fiber.interrupt(clients)

      process.stderr.write(`cluster database loss: answers during the outage ${JSON.stringify([...outage])}, in all ${JSON.stringify([...answers])}; relay peak ${relay.connections().peak}\n`)
      expect({ statuses: [...answers.keys()].filter((k) => k !== "200" && k !== "503 retry-after=2") }).toEqual({ statuses: [] })
      expect({ sawTheOutage: (outage.get("503 retry-after=2") ?? 0) > 0 }).toEqual({ sawTheOutage: true })
      expect({ r1: r1.run.child.exitCode, r2: r2.run.child.exitCode }).toEqual({ r1: null, r2: null })
      const after = yield* c.rows
      expect(fleet.map((a) => [a.id, after.get(a.id)!.operational_state])).toEqual(fleet.map((a) => [a.id, 3]))

      // settled again: one loop per agent, each verdict counted once
      const s0 = yield* snapshot(fleet, runners, c.rows)
      yield* sleep(5 * QUOTE_INTERVAL * 1000)
      expectOneLoopEach(fleet, s0, yield* snapshot(fleet, runners, c.rows), QUOTE_INTERVAL)
      for (const a of fleet) {
        const count = (yield* c.rows).get(a.id)!.attestation_count
        expect({ agent: a.id, doubled: count > a.asked.length }).toEqual({ agent: a.id, doubled: false })
      }
      expect(relay.connections().peak).toBeLessThanOrEqual(2 * POOL_MAX)
    }).pipe(Effect.scoped), 600_000)
})
