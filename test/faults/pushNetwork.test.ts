/**
 * Network faults between a push agent and the verifier, on SQLite and PostgreSQL: the push agent
 * program against the real verifier over HTTPS through a fault-injecting TCP relay. An outage
 * shorter than the deadline (quote_interval * 5) is retried with the agent's backoff and leaves its
 * status PASS throughout; a slow link changes nothing; an outage longer than the deadline is a
 * TIMEOUT (the verifier really did not hear from it), the agent keeps trying without crashing, and
 * after the admin's reactivation it attests again. The agent holds no more file descriptors after
 * the faults than before.
 */
import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Option, Ref } from "effect"
import { readdirSync } from "node:fs"
import { join } from "node:path"
import { type PushAgentStats, runPushAgent } from "../../src/push-agent/PushAgent.js"
import { Agents } from "../../src/verifier/domain/Agents.js"
import { pushAttestationStatus } from "../../src/verifier/domain/pushStore/pushStatus.js"
import { PushRepo } from "../../src/verifier/domain/pushStore/repo.js"
import { tempDir } from "../agent/support.js"
import { type FaultMode, startFaultProxy } from "../support/faultProxy.js"
import { waitFor } from "../verifier/pollerSupport.js"
import { backends } from "../verifier/support.js"
import { PushTestEnv, pushAgentIdentity, pushVerifier, simulatedAgent, testPushAgentOptions } from "../push/support.js"

const AGENT = "d432fbb3-d2f1-4a97-9ef7-75bd81c0fa17"
const openFds = () => readdirSync("/proc/self/fd").length
const sleep = (ms: number) => Effect.promise(() => new Promise((r) => setTimeout(r, ms)))

for (const [backend, available] of backends) describe.skipIf(!available)(`network faults between a push agent and the verifier on ${backend}`, () => {
  it.live("retries through an outage shorter than the deadline without a TIMEOUT; a longer one is a TIMEOUT it recovers from after reactivation", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("attest-push-netfault-")
      const env = yield* PushTestEnv
      const port = Number(new URL(env.url).port)
      const proxy = yield* Effect.acquireRelease(
        Effect.promise(() => startFaultProxy({ host: "127.0.0.1", port })),
        (p) => Effect.promise(() => p.close())
      )
      const fault = (mode: FaultMode) => Effect.sync(() => proxy.set(mode))
      const dataDir = join(dir, "agent")
      yield* Effect.flatten((yield* pushAgentIdentity(AGENT, dataDir)).enrol.pipe(Effect.orDie, Effect.as(Effect.void)))
      const stats = yield* Ref.make<PushAgentStats>({ submitted: 0, accepted: 0, refused: 0, sessions: 0, lastStatus: 0 })
      const accepted = Effect.map(Ref.get(stats), (s) => s.accepted)
      const repo = yield* Effect.provide(PushRepo, PushRepo.Default)
      const status = Effect.map(Effect.orDie(repo.findPushAgent(AGENT)), (p) => pushAttestationStatus(Option.getOrThrow(p)))
      const agent = yield* runPushAgent(
        testPushAgentOptions({ agentId: AGENT, dataDir, verifierUrl: `https://127.0.0.1:${proxy.port}`, verifierCa: env.ca }),
        stats
      ).pipe(Effect.provide(NodeHttpClient.layerUndici), Effect.fork)
      yield* Effect.addFinalizer(() => Fiber.interrupt(agent))

      yield* waitFor("2 accepted attestations", accepted, (n) => n >= 2)
      expect(yield* waitFor("PASS", status, (s) => s === "PASS")).toEqual("PASS")
      const fdsBefore = openFds()

      // a slow link, well under any timeout: attestations go on
      yield* fault({ _tag: "delay", ms: 200 })
      const beforeSlow = yield* accepted
      yield* waitFor("attestations over a slow link", accepted, (n) => n >= beforeSlow + 2)

      // an outage of 2 s (the deadline is 5 s): the agent retries, the status never leaves PASS
      for (const mode of [{ _tag: "reset" }, { _tag: "refuse" }] as const) {
        yield* fault(mode)
        const seen = new Set<string>()
        const outageEnd = Date.now() + 2_000
        while (Date.now() < outageEnd) {
          seen.add(yield* status)
          yield* sleep(100)
        }
        const atReturn = yield* accepted
        yield* fault({ _tag: "pass" })
        yield* waitFor(`attestations after a ${mode._tag} outage`, accepted, (n) => n >= atReturn + 2)
        seen.add(yield* status)
        expect([mode._tag, [...seen]]).toEqual([mode._tag, ["PASS"]])
      }

      // an outage longer than the deadline: TIMEOUT; the agent keeps trying; reactivation lets it attest again
      yield* fault({ _tag: "refuse" })
      expect(yield* waitFor("TIMEOUT", status, (s) => s === "TIMEOUT")).toEqual("TIMEOUT")
      yield* fault({ _tag: "pass" })
      yield* sleep(1_500)
      expect(yield* Fiber.poll(agent)).toEqual(Option.none()) // still running
      yield* Effect.orDie(Effect.flatMap(Agents, (a) => a.reactivate(AGENT)))
      const atReactivate = yield* accepted
      yield* waitFor("attestations after reactivation", accepted, (n) => n >= atReactivate + 2)
      expect(yield* waitFor("PASS again", status, (s) => s === "PASS")).toEqual("PASS")

      const fdsAfter = yield* waitFor("file descriptors back", Effect.sync(openFds), (n) => n <= fdsBefore + 2, 30_000)
      expect(fdsAfter).toBeLessThanOrEqual(fdsBefore + 2)
    }).pipe(Effect.scoped, Effect.provide(Layer.merge(pushVerifier(backend, { quote_interval: 1 }), simulatedAgent(`push-netfault-${backend}`)))), 240_000)
})
