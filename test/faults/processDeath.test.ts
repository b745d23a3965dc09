/**
 * kill -9 of a real `attest verifier` process, in rounds at random points of its cycles (a seeded
 * random source: a failure names its seed, `ATTEST_FAULT_SEED=<seed>` replays it), on SQLite and on
 * PostgreSQL, while it polls two pull agents and a push agent attests to it. After every restart:
 * each pull agent is polled again within one quote interval of the listening (with a margin for a
 * busy machine), from the IMA offset reached before (never entry 0 again); the push agent is never
 * TIMEOUT or FAIL (the restart grace); and no verdict is counted twice (the verifier's attestation
 * counts never exceed the quotes the agents answered, or the evidence the push agent had accepted).
 * Two rounds a backend; ATTEST_FAULT_ROUNDS=<n> runs more.
 */
import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Fiber, Layer, Ref } from "effect"
import { join } from "node:path"
import { RunningAgent } from "../../src/agent/Agent.js"
import { SimulatedMachine } from "../../src/agent/measurements/SimulatedMachine.js"
import { type PushAgentStats, runPushAgent } from "../../src/push-agent/PushAgent.js"
import { makeTestCa, tempDir } from "../agent/support.js"
import { startAttest } from "../support/attestProcess.js"
import { testDatabase } from "../support/db.js"
import { freePort } from "../support/swtpm.js"
import { pushAgentIdentity, simulatedAgent, testPushAgentOptions } from "../push/support.js"
import { agentBody, machinePolicyBase64, waitFor as waitUntil } from "../verifier/pollerSupport.js"
import { backends } from "../verifier/support.js"
import { agentStatus, faultRounds, faultSeed, recordedAgent, seededRandom, verifierAdmin, writeVerifierConfig } from "./support.js"

const LISTENING = /attest verifier: API \(HTTPS, mTLS admin\) on (https:\/\/\S+)/
const QUOTE_INTERVAL = 1
const ROUNDS = faultRounds(2)
const PUSH_ID = "d432fbb3-d2f1-4a97-9ef7-75bd81c0dead"
/** What the machines run between rounds, allowed by their runtime policy. */
const tools = Array.from({ length: ROUNDS }, (_, i) => ({ path: `/usr/bin/tool-${i + 1}`, content: `tool ${i + 1}` }))
const sleep = (ms: number) => Effect.promise(() => new Promise((r) => setTimeout(r, ms)))

for (const [backend, available] of backends) describe.skipIf(!available)(`verifier killed with SIGKILL in rounds on ${backend}`, () => {
  it.live("every agent resumes, IMA progress and push deadlines are kept, no verdict is counted twice", () =>
    Effect.gen(function*() {
      const seed = faultSeed()
      const random = seededRandom(seed)
      const dir = yield* tempDir("attest-kill-rounds-")
      const ca = yield* makeTestCa(join(dir, "cv_ca"))
      const db = yield* testDatabase(backend)
      const port = yield* Effect.promise(freePort)
      const config = writeVerifierConfig(dir, { caDir: ca.dir, db, port, quoteInterval: QUOTE_INTERVAL })
      const url = `https://127.0.0.1:${port}`
      const admin = (method: string, path: string, json?: unknown) => verifierAdmin(ca)(url, method, path, json)
      const status = (id: string) => agentStatus(verifierAdmin(ca), url, id)
      const waitFor = <A>(what: string, read: Effect.Effect<A>, ok: (a: A) => boolean) => waitUntil(`${what} (seed ${seed})`, read, ok, 120_000)
      const start = Effect.gen(function*() {
        const run = startAttest(["verifier", "--config", config])
        yield* Effect.addFinalizer(() => Effect.promise(() => run.stop()))
        yield* Effect.promise(() => run.waitFor(LISTENING, 120_000))
        return { run, listeningAt: Date.now() }
      })

      const pulls = yield* Effect.forEach(["killr-agent-1", "killr-agent-2"], (id) =>
        Effect.gen(function*() {
          const recorded = recordedAgent(`${id}-${backend}`, join(dir, id), ca.caPem)
          const ctx = yield* Layer.build(recorded.layer)
          return { id: `${id}-${backend}`, asked: recorded.asked, agent: Context.get(ctx, RunningAgent), machine: Context.get(ctx, SimulatedMachine) }
        }))
      const pushCtx = yield* Layer.build(simulatedAgent(`push-kill-${backend}`))
      const pushDir = join(dir, "push")
      const pushEnrolment = yield* pushAgentIdentity(PUSH_ID, pushDir).pipe(Effect.provide(pushCtx))

      let verifier = yield* start
      for (const a of pulls) {
        const body = { ...agentBody({ port: a.agent.port, akPublic: a.agent.akPublic, serverCert: a.agent.serverCert }, { v: false }), runtime_policy: machinePolicyBase64(tools) }
        const added = yield* admin("POST", `/v2.6/agents/${a.id}`, body)
        expect({ agent: a.id, status: added.status }).toEqual({ agent: a.id, status: 200 })
      }
      expect((yield* admin("POST", `/v2.6/agents/${PUSH_ID}`, pushEnrolment.body)).status).toBe(200)
      const stats = yield* Ref.make<PushAgentStats>({ submitted: 0, accepted: 0, refused: 0, sessions: 0, lastStatus: 0 })
      const pushAgent = yield* runPushAgent(testPushAgentOptions({ agentId: PUSH_ID, dataDir: pushDir, verifierUrl: url, verifierCa: ca.caPem }), stats)
        .pipe(Effect.provide(NodeHttpClient.layerUndici), Effect.provide(pushCtx), Effect.fork)
      yield* Effect.addFinalizer(() => Fiber.interrupt(pushAgent))
      for (const a of pulls) yield* waitFor(`${a.id} attested twice`, status(a.id), (s) => s.attestation_count >= 2)
      yield* waitFor("the push agent attested twice", Effect.map(Ref.get(stats), (s) => s.accepted), (n) => n >= 2)

      // the push agent's status, whenever the verifier answers, from here to the end
      const pushStatuses = new Set<string>()
      const watch = yield* Effect.fork(Effect.forever(Effect.zipRight(
        Effect.ignore(Effect.timeout(Effect.tap(status(PUSH_ID), (s) => Effect.sync(() => pushStatuses.add(String(s.attestation_status)))), "2 seconds")),
        sleep(200)
      )))

      for (let round = 1; round <= ROUNDS; round++) {
        const tag = { seed, round }
        // the machines grow their lists, then the process dies somewhere in its next cycles
        for (const a of pulls) yield* a.machine.measure(tools[round - 1]!.path, tools[round - 1]!.content)
        yield* sleep(Math.floor(500 + random() * 2_500))
        const reached = pulls.map((a) => Math.max(...a.asked.map((q) => q.entry)))
        verifier.run.child.kill("SIGKILL")
        expect({ ...tag, exit: yield* Effect.promise(() => verifier.run.exited) }).toEqual({ ...tag, exit: null })
        const asked = pulls.map((a) => a.asked.length)
        const accepted = (yield* Ref.get(stats)).accepted

        verifier = yield* start
        for (const [i, a] of pulls.entries()) {
          yield* waitFor(`${a.id} polled after restart ${round}`, Effect.sync(() => a.asked.length), (n) => n > asked[i]!)
          const first = a.asked[asked[i]!]!
          expect({ ...tag, agent: a.id, resumedFrom: first.entry >= reached[i]! && first.entry > 0 }).toEqual({ ...tag, agent: a.id, resumedFrom: true })
          expect({ ...tag, agent: a.id, late: first.at - verifier.listeningAt > QUOTE_INTERVAL * 1000 + 15_000 }).toEqual({ ...tag, agent: a.id, late: false })
          const counted = (yield* status(a.id)).attestation_count
          const after = yield* waitFor(`${a.id} attested after restart ${round}`, status(a.id), (s) => s.attestation_count > counted)
          expect({ ...tag, agent: a.id, state: after.operational_state }).toEqual({ ...tag, agent: a.id, state: 3 })
        }
        yield* waitFor(`the push agent accepted after restart ${round}`, Effect.map(Ref.get(stats), (s) => s.accepted), (n) => n > accepted)
      }
      yield* Fiber.interrupt(watch)
      yield* Fiber.interrupt(pushAgent)

      // nothing counted twice: every verdict stands for one quote answered or one evidence accepted
      for (const a of pulls) {
        const counted = (yield* status(a.id)).attestation_count
        expect({ seed, agent: a.id, doubled: counted > a.asked.length }).toEqual({ seed, agent: a.id, doubled: false })
      }
      const push = yield* status(PUSH_ID)
      // a verdict stands for one evidence sent: one the verifier judged and died before answering 202
      // to (or judged again after its restart) counts once, though its agent never saw it accepted
      const sent = (yield* Ref.get(stats)).submitted
      expect({ seed, doubled: push.attestation_count > sent }).toEqual({ seed, doubled: false })
      expect({ seed, statuses: [...pushStatuses].sort() }).toEqual({ seed, statuses: ["PASS"] })
      expect(yield* Effect.promise(() => verifier.run.stop())).toBe(0)
    }).pipe(Effect.scoped), 600_000)
})
