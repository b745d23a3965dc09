/**
 * Two real `attest verifier` processes (the bundle) with the same verifier_id on one PostgreSQL
 * schema (issue 23 §3): a reactivate taken by the second never leaves two loops polling one agent
 * (quotes and attestation_count per interval stay those of one loop, and the first process says its
 * loop ended to a newer owner); a revocation notice is delivered once when both run (a slow local
 * webhook receiver counts deliveries); a process killed (SIGKILL, a test-only hook) right after the
 * verdict that causes a notice loses nothing: the other process delivers it; and a push verdict
 * that both processes judge (each re-runs it at start, held a while by a test-only hook) counts once.
 * The agents run in this test process on simulated TPMs.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Option } from "effect"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { join } from "node:path"
import { RunningAgent } from "../../src/agent/Agent.js"
import { SimulatedMachine } from "../../src/agent/measurements/SimulatedMachine.js"
import { Agents } from "../../src/verifier/domain/Agents.js"
import { PushRepo } from "../../src/verifier/domain/pushStore/repo.js"
import { makeTestCa, tempDir } from "../agent/support.js"
import { agentStatus, recordedAgent, verifierAdmin, writeVerifierConfig } from "../faults/support.js"
import { startAttest } from "../support/attestProcess.js"
import { testDatabase } from "../support/db.js"
import { needsPostgres } from "../support/requirements.js"
import { agentBody, waitFor } from "./pollerSupport.js"
import { validBody, verifierLayer } from "./support.js"

const LISTENING = /attest verifier: API \(HTTPS, mTLS admin\) on (https:\/\/\S+)/
const QUOTE_INTERVAL = 1
const pgOk = await needsPostgres()

/** A simulated agent (the fault suites' recorded one) with its parts at hand. */
const countedAgent = (agentId: string, dir: string, caPem: string) => {
  const recorded = recordedAgent(agentId, dir, caPem)
  return Effect.map(Layer.build(recorded.layer), (ctx) => ({ asked: recorded.asked, agent: Context.get(ctx, RunningAgent), machine: Context.get(ctx, SimulatedMachine) }))
}

/** A webhook receiver that answers each POST after `delayMs` (a slow one keeps a notice in flight) and counts them. */
const webhookReceiver = (delayMs: number) =>
  Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<{ readonly url: string; readonly bodies: Array<string>; readonly server: http.Server }>((resolve) => {
        const bodies: Array<string> = []
        const server = http.createServer((req, res) => {
          let body = ""
          req.on("data", (d: Buffer) => (body += d.toString()))
          req.on("end", () => {
            bodies.push(body)
            setTimeout(() => res.writeHead(200).end("{}"), delayMs)
          })
        })
        server.listen(0, "127.0.0.1", () => resolve({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/revocation`, bodies, server }))
      })
    ),
    (r) => Effect.promise(() => new Promise<void>((done) => r.server.close(() => done())))
  )

/** A fresh PostgreSQL schema, a CA, and `attest verifier` processes on them with the given lines and environment. */
const cluster = (extra: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const dir = yield* tempDir("attest-two-")
    const ca = yield* makeTestCa(join(dir, "cv_ca"))
    const db = yield* testDatabase("pg")
    let n = 0
    const start = (env: Record<string, string> = {}) =>
      Effect.gen(function*() {
        const config = writeVerifierConfig(dir, { caDir: ca.dir, db, port: 0, quoteInterval: QUOTE_INTERVAL, name: `p${++n}`, extra: ["request_timeout = 5", ...extra] })
        const run = startAttest(["verifier", "--config", config], { env })
        yield* Effect.addFinalizer(() => Effect.promise(() => run.stop()))
        const line = yield* Effect.promise(() => run.waitFor(LISTENING, 120_000))
        return { run, url: LISTENING.exec(line.text)![1]! }
      })
    const admin = verifierAdmin(ca)
    const status = (url: string, id: string) => agentStatus(admin, url, id)
    /** A simulated pull agent, added through the process at `url`. */
    const addPullAgent = (url: string, id: string) =>
      Effect.gen(function*() {
        const a = yield* countedAgent(id, join(dir, id), ca.caPem)
        const added = yield* admin(url, "POST", `/v2.6/agents/${id}`, agentBody({ port: a.agent.port, akPublic: a.agent.akPublic, serverCert: a.agent.serverCert }, { v: false }))
        expect({ agent: id, status: added.status }).toEqual({ agent: id, status: 200 })
        return a
      })
    return { db, start, admin, status, addPullAgent }
  })

describe.skipIf(!pgOk)("two verifier processes on one PostgreSQL", () => {
  it.live("a reactivate through the second process never leaves two loops polling the agent", () =>
    Effect.gen(function*() {
      const c = yield* cluster(["enabled_revocation_notifications = []"])
      const id = "two-reactivate"
      const first = yield* c.start()
      const a = yield* c.addPullAgent(first.url, id)
      yield* waitFor("attested twice by the first process", c.status(first.url, id), (s) => s.attestation_count >= 2)

      const second = yield* c.start()
      const reactivated = yield* c.admin(second.url, "PUT", `/v2.6/agents/${id}/reactivate`)
      expect(reactivated.status).toEqual(200)
      // the first process's loop loses its next write to the newer owner and ends (generous for a loaded machine)
      yield* Effect.tryPromise(() => first.run.waitFor(new RegExp(`agent ${id}: a newer loop owns it`), 30_000)).pipe(Effect.ignore)
      yield* Effect.sleep("3 seconds")

      // a window of quote intervals: one loop asks at most once an interval (plus one in flight)
      const windowS = 10
      const asked = a.asked.length
      const counted = (yield* c.status(second.url, id)).attestation_count
      yield* Effect.sleep(`${windowS} seconds`)
      const quotes = a.asked.length - asked
      const attestations = (yield* c.status(second.url, id)).attestation_count - counted
      expect(quotes, `quotes asked in ${windowS} s (two loops ask twice as many)`).toBeLessThanOrEqual(windowS / QUOTE_INTERVAL + 2)
      expect(attestations, `attestation_count added in ${windowS} s (two loops count twice)`).toBeLessThanOrEqual(windowS / QUOTE_INTERVAL + 2)
      expect(attestations).toBeGreaterThan(0)
      expect(first.run.output()).toMatch(new RegExp(`agent ${id}: a newer loop owns it \\(owner epoch \\d+, this loop's \\d+\\); this loop ends`))
    }).pipe(Effect.scoped), 400_000)

  it.live("a revocation notice is delivered once while both processes run", () =>
    Effect.gen(function*() {
      const hook = yield* webhookReceiver(3_000)
      const c = yield* cluster([`enabled_revocation_notifications = ["webhook"]`, `webhook_url = "${hook.url}"`])
      const id = "two-notice"
      const first = yield* c.start()
      const second = yield* c.start()
      const a = yield* c.addPullAgent(second.url, id)
      yield* waitFor("attested", c.status(first.url, id), (s) => s.attestation_count >= 1)
      yield* a.machine.measure("/usr/bin/evil", "evil payload")
      yield* waitFor("the notice delivered", Effect.sync(() => hook.bodies.length), (n) => n >= 1)
      // both processes' notifiers look at the outbox every second; the delivery takes 3 s: a second
      // delivery would start while the first is in flight, so a few looks past its end suffice
      yield* Effect.sleep("5 seconds")
      expect(hook.bodies.length).toEqual(1)
      expect(JSON.parse(JSON.parse(hook.bodies[0]!).msg)).toMatchObject({ type: "revocation", agent_id: id })
    }).pipe(Effect.scoped), 400_000)

  it.live("a process killed right after the verdict that causes a notice loses nothing: the other delivers it", () =>
    Effect.gen(function*() {
      const hook = yield* webhookReceiver(0)
      const c = yield* cluster([`enabled_revocation_notifications = ["webhook"]`, `webhook_url = "${hook.url}"`])
      const id = "two-crash"
      const doomed = yield* c.start({ ATTEST_TEST_CRASH_AT: "after-invalid-verdict" })
      const a = yield* c.addPullAgent(doomed.url, id)
      yield* waitFor("attested", c.status(doomed.url, id), (s) => s.attestation_count >= 1)
      yield* a.machine.measure("/usr/bin/evil", "evil payload")
      expect(yield* Effect.promise(() => doomed.run.exited)).toBeNull()
      expect(doomed.run.child.signalCode).toEqual("SIGKILL")
      expect(hook.bodies.length).toEqual(0)
      const other = yield* c.start()
      // the verdict is stored (the crash came after it) and its notice with it
      const after = yield* c.status(other.url, id)
      expect(after.operational_state).toEqual(9)
      yield* waitFor("the notice delivered by the other process", Effect.sync(() => hook.bodies.length), (n) => n >= 1)
      yield* Effect.sleep("3 seconds")
      expect(hook.bodies.length).toEqual(1)
    }).pipe(Effect.scoped), 400_000)

  it.live("a push verdict judged by both processes counts once", () =>
    Effect.gen(function*() {
      const c = yield* cluster([`mode = "push"`])
      const id = "d432fbb3-d2f1-4a97-9ef7-75bd81c00023"
      // an enrolled push agent with evidence accepted and not yet judged (as a process that died left it)
      yield* Effect.gen(function*() {
        yield* (yield* Agents).add(id, { ...validBody(), attestation_model: "push" })
        const repo = yield* PushRepo
        yield* repo.ensurePushAgent(id, 1)
        yield* repo.insertAttestation({ agent_id: id, idx: 0, capabilities: "[]", evidence_requested: "[]", boot_time: "x", capabilities_received_at: 1, challenges_expire_at: Date.now() + 600_000 })
        expect(yield* repo.acceptEvidence(id, 0, "[]", 2)).toEqual(true)
      }).pipe(Effect.provide(PushRepo.Default), Effect.provide(verifierLayer(c.db)))
      // both re-run it at start; each holds its verdict 10 s before writing it
      const env = { ATTEST_TEST_HOLD_PUSH_VERDICT_MS: "10000" }
      const [one, two] = yield* Effect.all([c.start(env), c.start(env)], { concurrency: 2 })
      const judged = new RegExp(`push attestation 0 of agent ${id}: (fail|judged already)`)
      yield* Effect.forEach([one, two], (p) => Effect.promise(() => p.run.waitFor(judged, 120_000)))
      const row = yield* Effect.flatMap(PushRepo, (repo) => repo.findPushAgent(id)).pipe(Effect.provide(PushRepo.Default), Effect.provide(verifierLayer(c.db)))
      expect(Option.map(row, (r) => [r.consecutive_failures, r.attestation_count])).toEqual(Option.some([1, 0]))
      const lines = [one, two].map((p) => p.run.output().match(judged)?.[1])
      expect(lines.sort()).toEqual(["fail", "judged already"])
    }).pipe(Effect.scoped), 400_000)
})
