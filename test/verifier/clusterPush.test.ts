/**
 * Push agents under cluster mode (issue 24) with real processes on real PostgreSQL: two `attest
 * verifier` runners (`cluster = true`, the bundle) on one fresh database, real push agents
 * (runPushAgent on simulated TPMs, in this test process), quote_interval 1 s (deadlines 5 s).
 * - A deadline fires once with both runners alive: an agent that attested to r2 and went silent is
 *   TIMEOUT, and exactly one runner says it timed out (both sweep: the expiry is one conditional UPDATE).
 * - r1 dies by SIGKILL right after answering 202 to an agent's evidence and before judging it
 *   (ATTEST_TEST_CRASH_BEFORE_PUSH_VERDICT, domain/testHooks.ts): the survivor's push duties
 *   (the cluster Singleton) judge that orphaned verdict, once (passed, counted 1), within seconds
 *   (not after verification_timeout: that is set to 300 s here).
 * - The deadline of an agent that attested to r1 until its death fires on the survivor, once.
 * - A revocation notice (webhook) caused by a pull agent's failure is delivered once, both
 *   runners' notifiers claiming from the one outbox.
 */
import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Fiber, Layer, Ref } from "effect"
import { createServer } from "node:http"
import { join } from "node:path"
import { RunningAgent } from "../../src/agent/Agent.js"
import { SimulatedMachine } from "../../src/agent/measurements/SimulatedMachine.js"
import { type PushAgentStats, runPushAgent } from "../../src/push-agent/PushAgent.js"
import { makeTestCa, tempDir } from "../agent/support.js"
import { agentStatus, recordedAgent, verifierAdmin, writeVerifierConfig } from "../faults/support.js"
import { pushAgentIdentity, simulatedAgent, testPushAgentOptions } from "../push/support.js"
import { startAttest } from "../support/attestProcess.js"
import { clusterDatabaseOptions } from "../support/clusterFleet.js"
import { needsPostgres } from "../support/requirements.js"
import { freePort } from "../support/swtpm.js"
import { agentBody, machinePolicyBase64, waitFor } from "./pollerSupport.js"

const LISTENING = /attest verifier: API \(HTTPS, mTLS admin\) on (https:\/\/\S+)/
const QUOTE_INTERVAL = 1
const SILENT = "5e1e7a11-0000-4000-8000-000000000001"
const TO_R1 = "5e1e7a11-0000-4000-8000-000000000002"
const ORPHAN = "5e1e7a11-0000-4000-8000-000000000003"
const PULL = "cluster-push-pull-agent"
const tools = [{ path: "/usr/bin/allowed-tool", content: "allowed" }]
const pgOk = await needsPostgres()

const sleep = (ms: number) => Effect.promise(() => new Promise((r) => setTimeout(r, ms)))
const timedOutLines = (text: string, id: string) => text.split("\n").filter((l) => l.includes(`Agent ${id} has timed out`)).length

/** A webhook receiver on a free port: how many revocation notices reached it. */
const webhook = Effect.acquireRelease(
  Effect.promise(() =>
    new Promise<{ readonly url: string; readonly received: Array<string>; readonly close: () => void }>((resolve) => {
      const received: Array<string> = []
      const server = createServer((req, res) => {
        let body = ""
        req.on("data", (c: Buffer) => (body += c.toString("utf8")))
        req.on("end", () => {
          received.push(body)
          res.writeHead(200).end()
        })
      })
      server.listen(0, "127.0.0.1", () => {
        const address = server.address()
        const port = typeof address === "object" && address !== null ? address.port : 0
        resolve({ url: `http://127.0.0.1:${port}/revocation`, received, close: () => server.close() })
      })
    })
  ),
  (hook) => Effect.sync(hook.close)
)

describe.skipIf(!pgOk)("verifier cluster mode: push agents on two runners", () => {
  it.live("deadlines fire once, with both runners and after kill -9 of one; an orphaned verdict is judged by the survivor; a notice is delivered once", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("attest-cluster-push-")
      const ca = yield* makeTestCa(join(dir, "cv_ca"))
      const db = yield* clusterDatabaseOptions // a database of its own: shard locks are per database
      const admin = verifierAdmin(ca)
      const hook = yield* webhook
      const startRunner = (name: string, env: Readonly<Record<string, string>> = {}) =>
        Effect.gen(function*() {
          const runnerPort = yield* Effect.promise(freePort)
          const config = writeVerifierConfig(dir, {
            caDir: ca.dir,
            db,
            port: 0,
            quoteInterval: QUOTE_INTERVAL,
            name,
            extra: [
              `verifier_id = "${name}"`,
              "request_timeout = 5",
              // an orphan must be judged by the survivor's push duties, not by the timeout fallback
              "verification_timeout = 300",
              `enabled_revocation_notifications = ["webhook"]`,
              `webhook_url = "${hook.url}"`,
              "cluster = true",
              `cluster_runner_port = ${runnerPort}`,
              "cluster_shards = 30",
              "cluster_health_check_interval = 1",
              "cluster_lock_refresh_interval = 1",
              "cluster_lock_expiration = 4"
            ]
          })
          const run = startAttest(["verifier", "--config", config], { env })
          yield* Effect.addFinalizer(() => Effect.promise(() => run.stop()))
          const line = yield* Effect.tryPromise(() => run.waitFor(LISTENING, 120_000)).pipe(
            Effect.catchAll(() => Effect.zipRight(sleep(1000), Effect.dieMessage(`runner ${name} did not start (exit ${run.child.exitCode}):\n${run.output()}`)))
          )
          return { name, run, url: LISTENING.exec(line.text)![1]! }
        })
      // one after the other (cluster.test.ts says why)
      const r1 = yield* startRunner("r1", { ATTEST_TEST_CRASH_BEFORE_PUSH_VERDICT: ORPHAN })
      const r2 = yield* startRunner("r2")
      const status = (url: string, id: string) => agentStatus(admin, url, id)

      // three push agents, enrolled through either runner
      const push = yield* Effect.forEach([SILENT, TO_R1, ORPHAN], (id, i) =>
        Effect.gen(function*() {
          const ctx = yield* Layer.build(simulatedAgent(`cluster-push-${i}`))
          const dataDir = join(dir, id)
          const enrolment = yield* pushAgentIdentity(id, dataDir).pipe(Effect.provide(ctx))
          const added = yield* admin(i % 2 === 0 ? r1.url : r2.url, "POST", `/v2.6/agents/${id}`, enrolment.body)
          expect({ agent: id, status: added.status }).toEqual({ agent: id, status: 200 })
          const stats = yield* Ref.make<PushAgentStats>({ submitted: 0, accepted: 0, refused: 0, sessions: 0, lastStatus: 0 })
          const run = (url: string) =>
            Effect.gen(function*() {
              const fiber = yield* runPushAgent(testPushAgentOptions({ agentId: id, dataDir, verifierUrl: url, verifierCa: ca.caPem }), stats).pipe(
                Effect.provide(NodeHttpClient.layerUndici),
                Effect.provide(ctx),
                Effect.fork
              )
              yield* Effect.addFinalizer(() => Fiber.interrupt(fiber))
              return fiber
            })
          return { id, stats, run }
        }))
      const [silent, toR1, orphan] = push as [typeof push[0], typeof push[0], typeof push[0]]
      const accepted = (a: typeof silent) => Effect.map(Ref.get(a.stats), (s) => s.accepted)

      // a pull agent whose failure causes one revocation notice
      const recorded = recordedAgent(PULL, join(dir, PULL), ca.caPem)
      const pullCtx = yield* Layer.build(recorded.layer)
      const pull = { agent: Context.get(pullCtx, RunningAgent), machine: Context.get(pullCtx, SimulatedMachine) }
      const pullBody = { ...agentBody({ port: pull.agent.port, akPublic: pull.agent.akPublic, serverCert: pull.agent.serverCert }, { v: false }), runtime_policy: machinePolicyBase64(tools) }
      expect((yield* admin(r2.url, "POST", `/v2.6/agents/${PULL}`, pullBody)).status).toBe(200)

      // 1. both alive: SILENT attests to r2, TO_R1 to r1; SILENT goes silent and its deadline fires once
      const silentFiber = yield* silent.run(r2.url)
      yield* toR1.run(r1.url)
      yield* waitFor("SILENT accepted twice", accepted(silent), (n) => n >= 2, 120_000)
      yield* waitFor("TO_R1 accepted twice", accepted(toR1), (n) => n >= 2, 120_000)
      yield* Fiber.interrupt(silentFiber)
      yield* waitFor("SILENT timed out", status(r1.url, SILENT), (s) => s.attestation_status === "TIMEOUT", 60_000)
      yield* sleep(3_000) // both runners sweep meanwhile
      const silentFired = timedOutLines(r1.run.output(), SILENT) + timedOutLines(r2.run.output(), SILENT)
      expect({ agent: SILENT, deadlineFired: silentFired }).toEqual({ agent: SILENT, deadlineFired: 1 })

      // 2. a revocation notice: the pull agent runs what its policy does not allow
      yield* waitFor("the pull agent attested", status(r2.url, PULL), (s) => s.attestation_count >= 1, 120_000)
      yield* pull.machine.measure("/usr/bin/not-in-policy", "intruder")
      yield* waitFor("the revocation notice delivered", Effect.sync(() => hook.received.length), (n) => n >= 1, 60_000)

      // 3. r1 answers 202 to ORPHAN's evidence and dies (SIGKILL) before judging it
      const orphanSessionAt = Date.now()
      yield* orphan.run(r1.url)
      const exit = yield* Effect.promise(() => r1.run.exited)
      const killedAt = Date.now()
      expect({ r1Exit: exit, signal: r1.run.child.signalCode }).toEqual({ r1Exit: null, signal: "SIGKILL" })
      expect({ orphanAccepted: (yield* Ref.get(orphan.stats)).accepted }).toEqual({ orphanAccepted: 1 })
      // the survivor's push duties judge it: passed, counted once
      const judged = yield* waitFor("ORPHAN's verdict completed by r2", status(r2.url, ORPHAN), (s) => s.attestation_count >= 1, 60_000)
      const judgedAfterS = (Date.now() - killedAt) / 1000
      process.stderr.write(`cluster push: orphaned verdict judged by the survivor ${judgedAfterS.toFixed(1)} s after the kill (${((killedAt - orphanSessionAt) / 1000).toFixed(1)} s from the agent's start to the kill)\n`)
      expect({ agent: ORPHAN, status: judged.attestation_status, count: judged.attestation_count }).toEqual({ agent: ORPHAN, status: "PASS", count: 1 })
      const latest = yield* admin(r2.url, "GET", `/v3.0/agents/${ORPHAN}/attestations/latest`)
      const attributes = JSON.parse(latest.body).data.attributes as { stage: string; evaluation: string }
      expect({ stage: attributes.stage, evaluation: attributes.evaluation }).toEqual({ stage: "verification_complete", evaluation: "pass" })

      // 4. TO_R1's deadline, last written by r1, fires on the survivor, once
      yield* waitFor("TO_R1 timed out", status(r2.url, TO_R1), (s) => s.attestation_status === "TIMEOUT", 60_000)
      yield* sleep(3_000)
      const toR1Fired = timedOutLines(r1.run.output(), TO_R1) + timedOutLines(r2.run.output(), TO_R1)
      expect({ agent: TO_R1, deadlineFired: toR1Fired, onSurvivor: timedOutLines(r2.run.output(), TO_R1) }).toEqual({ agent: TO_R1, deadlineFired: 1, onSurvivor: 1 })
      expect({ orphanCountLater: (yield* status(r2.url, ORPHAN)).attestation_count }).toEqual({ orphanCountLater: 1 })

      // the notice was delivered once, whichever runner claimed it
      expect({ notices: hook.received.length }).toEqual({ notices: 1 })
    }).pipe(Effect.scoped), 300_000)
})
