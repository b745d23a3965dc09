/**
 * PostgreSQL unreachable under a verifier that is attesting (through a TCP relay that refuses and
 * cuts every connection, so the verifier sees real connection loss): for longer than the pull
 * loop's whole retry budget and longer than a push agent's deadline. No agent may be marked failed,
 * invalid or timed out because the *database* was away (a push agent gets one full deadline from
 * the database's return, as from a restart); both kinds attest again once it is back;
 * the verifier never holds more connections than its pool's bound.
 */
import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Fiber, Layer, Option, Ref } from "effect"
import { join } from "node:path"
import { type PushAgentStats, runPushAgent } from "../../src/push-agent/PushAgent.js"
import { pushAttestationStatus } from "../../src/verifier/domain/pushStore/pushStatus.js"
import { PushRepo } from "../../src/verifier/domain/pushStore/repo.js"
import { AgentRepo } from "../../src/verifier/domain/repo/AgentRepo.js"
import { Agents } from "../../src/verifier/domain/Agents.js"
import { closeClients, makeTestCa, RunningAgent, simulatedAgentLayer, tempDir } from "../agent/support.js"
import { testDatabase, throughRelay } from "../support/db.js"
import { needsPostgres, postgresUrl } from "../support/requirements.js"
import { startFaultProxy } from "../support/faultProxy.js"
import { startTcpProxy } from "../support/tcpProxy.js"
import { PushTestEnv, pushAgentIdentity, pushVerifierOn, simulatedAgent, testPushAgentOptions } from "../push/support.js"
import { agentBody, newClientLog, verifierWithPoller, waitFor } from "../verifier/pollerSupport.js"

const pgOk = await needsPostgres()
const PULL = "dbloss00-d2f1-4a97-9ef7-75bd81c0c001"
const PUSH = "d432fbb3-d2f1-4a97-9ef7-75bd81c0db10"
/** The pg pool's bound (src/db/Sql.ts). */
const POOL_MAX = 10
const OUTAGE_MS = 8_000

const relayToPostgres = Effect.acquireRelease(
  Effect.promise(() => {
    const target = new URL(postgresUrl)
    return startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) })
  }),
  (p) => Effect.promise(() => p.close())
)
const sleep = (ms: number) => Effect.promise(() => new Promise((r) => setTimeout(r, ms)))

describe.skipIf(!pgOk)("PostgreSQL away while agents attest", () => {
  it.scopedLive("a pull agent is not failed by the database's absence and attests again when it returns", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("attest-dbloss-pull-")
      const ca = yield* makeTestCa(join(dir, "ca"))
      yield* Effect.addFinalizer(() => Effect.sync(closeClients))
      const agent = Context.get(
        yield* Layer.build(simulatedAgentLayer({ agentId: PULL, dataDir: join(dir, "agent"), trustedClientCa: ca.caPem, revocationCert: ca.clientCert }, { name: "dbloss" }, { seed: "dbloss" })),
        RunningAgent
      )
      const relay = yield* relayToPostgres
      const ctx = yield* Layer.build(verifierWithPoller(throughRelay(yield* testDatabase("pg"), relay.port), ca, {
        quote_interval: 1,
        retry_interval: 1,
        exponential_backoff: false,
        max_retries: 3,
        request_timeout: 2
      }, newClientLog()))
      const row = Effect.map(Context.get(ctx, AgentRepo).find(PULL), Option.getOrThrow)
      yield* Context.get(ctx, Agents).add(PULL, agentBody(agent))
      yield* waitFor("2 attestations", row, (r) => r.attestation_count >= 2)

      relay.refuse()
      yield* sleep(OUTAGE_MS) // several quote intervals and more than max_retries * retry_interval
      relay.accept()
      const before = (yield* waitFor("the database back", Effect.either(row), (e) => e._tag === "Right")).pipe((e) => e._tag === "Right" ? e.right.attestation_count : 0)
      const after = yield* waitFor("attestations after the outage", row, (r) => r.attestation_count >= before + 2)
      expect([after.operational_state, after.severity_level, after.last_event_id]).toEqual([3, null, null])
      expect(relay.connections().peak).toBeLessThanOrEqual(POOL_MAX)
    }), 180_000)

  it.live("a push agent does not time out because the database was away", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("attest-dbloss-push-")
      const relay = yield* relayToPostgres
      const db = throughRelay(yield* testDatabase("pg"), relay.port)
      yield* Effect.gen(function*() {
        const env = yield* PushTestEnv
        const dataDir = join(dir, "agent")
        yield* Effect.orDie((yield* pushAgentIdentity(PUSH, dataDir)).enrol)
        const stats = yield* Ref.make<PushAgentStats>({ submitted: 0, accepted: 0, refused: 0, sessions: 0, lastStatus: 0 })
        const accepted = Effect.map(Ref.get(stats), (s) => s.accepted)
        const repo = yield* Effect.provide(PushRepo, PushRepo.Default)
        const status = Effect.map(Effect.orDie(repo.findPushAgent(PUSH)), (p) => pushAttestationStatus(Option.getOrThrow(p)))
        // the agent reaches the verifier through a relay of its own, so that it can come back
        // after the database (a real agent's backoff is 10 s at first): the verifier's deadline
        // check then runs first
        const agentLink = yield* Effect.acquireRelease(
          Effect.promise(() => startFaultProxy({ host: "127.0.0.1", port: Number(new URL(env.url).port) })),
          (p) => Effect.promise(() => p.close())
        )
        const agent = yield* runPushAgent(testPushAgentOptions({ agentId: PUSH, dataDir, verifierUrl: `https://127.0.0.1:${agentLink.port}`, verifierCa: env.ca }), stats)
          .pipe(Effect.provide(NodeHttpClient.layerUndici), Effect.fork)
        yield* Effect.addFinalizer(() => Fiber.interrupt(agent))
        yield* waitFor("2 accepted attestations", accepted, (n) => n >= 2)

        relay.refuse()
        agentLink.set({ _tag: "refuse" })
        yield* sleep(OUTAGE_MS) // longer than the deadline, quote_interval * 5 = 5 s
        relay.accept()
        // what the verifier says of the agent from the database's return until it attested twice
        const seen = new Set<string>()
        const watch = yield* Effect.fork(Effect.forever(Effect.zipRight(Effect.tap(Effect.either(status), (s) => s._tag === "Right" && seen.add(s.right)), sleep(100))))
        yield* sleep(3_000) // the deadline check runs at least once meanwhile (every 2 s after a failure)
        agentLink.set({ _tag: "pass" })
        const atReturn = yield* accepted
        yield* waitFor("attestations after the outage", accepted, (n) => n >= atReturn + 2)
        yield* Fiber.interrupt(watch)
        expect([...seen]).toEqual(["PASS"])
        expect(relay.connections().peak).toBeLessThanOrEqual(POOL_MAX)
      }).pipe(Effect.provide(Layer.merge(pushVerifierOn(db, { quote_interval: 1 }), simulatedAgent("push-dbloss"))))
    }).pipe(Effect.scoped), 180_000)
})
