/**
 * The push agent program against a real registrar and the push verifier over HTTPS: it registers
 * and activates at the registrar (the pull agent's identity and registration code), the admin
 * enrols it at the verifier with the AK it registered, and it runs its cycles: session PoP, phase 1,
 * evidence, sleep meta.seconds_to_next_attestation; every attestation passes. Its backoff delays
 * follow the configuration; a proof of possession the verifier refuses is sent again once per
 * interval, not in a loop.
 */
import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Fiber, Layer, Logger, Ref, Schedule } from "effect"
import * as crypto from "node:crypto"
import { join } from "node:path"
import { BoundListeners } from "../../src/http/HttpServers.js"
import { simulatorManufacturerCa } from "../../src/tpm/simulator/TpmSimulator.js"
import { trustStoreOf } from "../../src/pki/chain.js"
import { backoffDelayMs } from "../../src/push-agent/backoff.js"
import { type PushAgentStats, runPushAgent } from "../../src/push-agent/PushAgent.js"
import { RegistrarServerLive } from "../../src/registrar/Server.js"
import { tempDir } from "../agent/support.js"
import { makeTestPki, sqliteLayer, testServerTls } from "../registrar/harness.js"
import { PushTestEnv, pushAgentIdentity, pushVerifier, simulatedAgent, testPushAgentOptions, verdict } from "./support.js"

const AGENT = "d432fbb3-d2f1-4a97-9ef7-75bd81c00000"
const pki = makeTestPki()
const simulatorCa = new crypto.X509Certificate(simulatorManufacturerCa().pem)
const fastBackoff = { initialMs: 100, maxMs: 400, multiplier: 2, maxRetries: 5, jitter: false }

describe("push agent", () => {
  it("backoff delays follow the configuration", () => {
    const o = { initialMs: 10_000, maxMs: 300_000, multiplier: 2, maxRetries: 5, jitter: false }
    expect([1, 2, 3, 4, 5, 6, 7].map((n) => backoffDelayMs(o, n))).toEqual([10_000, 20_000, 40_000, 80_000, 160_000, 300_000, 300_000])
    expect(backoffDelayMs({ ...o, jitter: true }, 2, 0)).toEqual(10_000)
    expect(backoffDelayMs({ ...o, maxRetries: 2 }, 3)).toEqual(300_000)
  })

  it.live("registers at the registrar, attests every cycle, every attestation passes", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("attest-push-agent-")
      const registrar = yield* Layer.build(
        RegistrarServerLive({ host: "127.0.0.1", port: 0, tlsPort: 0, ekTrustStore: trustStoreOf([simulatorCa]), tpmIdentity: "default" }).pipe(
          Layer.provide(testServerTls(pki)),
          Layer.provide(sqliteLayer(join(dir, "registrar.sqlite")))
        )
      )
      const registrarUrl = Context.get(registrar, BoundListeners).get("registrar-http")!.url
      const env = yield* PushTestEnv
      const dataDir = join(dir, "agent")
      // the admin's enrolment: the AK the agent registers, a runtime policy of its machine
      const { enrol } = yield* pushAgentIdentity(AGENT, dataDir)
      yield* enrol

      const stats = yield* Ref.make<PushAgentStats>({ submitted: 0, accepted: 0, refused: 0, sessions: 0, lastStatus: 0 })
      const final = yield* runPushAgent({
        agentId: AGENT,
        dataDir,
        registrarUrl,
        registrarRetry: { initialDelay: "50 millis", maxDelay: "200 millis" },
        contactIp: "127.0.0.1",
        contactPort: 9002,
        verifierUrl: env.url,
        verifierCa: env.ca,
        attestationIntervalSeconds: 1,
        backoff: fastBackoff,
        cycles: 3
      }, stats).pipe(Effect.provide(NodeHttpClient.layerUndici))
      expect([final.accepted, final.refused, final.sessions]).toEqual([3, 0, 1])
      yield* verdict(AGENT)
      const listed = yield* env.request("GET", `/v3.0/agents/${AGENT}/attestations`, { admin: true })
      expect(listed.json.data.map((a: any) => [a.attributes.stage, a.attributes.evaluation])).toEqual([
        ["verification_complete", "pass"],
        ["verification_complete", "pass"],
        ["verification_complete", "pass"]
      ])
      // the second and third cycles sent only new entries (none): the offset moved to the end of the list
      expect(listed.json.data[2].attributes.evidence[1].chosen_parameters.starting_offset).toBeGreaterThan(0)
      expect(listed.json.data[2].attributes.evidence[1].data.entry_count).toEqual(0)
    }).pipe(Effect.scoped, Effect.provide(Layer.merge(pushVerifier("sqlite"), simulatedAgent("push-agent")))), 120_000)

  it.live("started before its enrolment, says it waits for enrolment (once), then that it is enrolled; no 'attestation failed'", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("attest-push-agent-wait-")
      const env = yield* PushTestEnv
      const dataDir = join(dir, "agent")
      const { enrol } = yield* pushAgentIdentity(AGENT, dataDir)
      const logged: Array<string> = []
      const capture = Logger.replace(Logger.defaultLogger, Logger.make(({ logLevel, message }) => void logged.push(`${logLevel.label} ${String(message)}`)))
      const stats = yield* Ref.make<PushAgentStats>({ submitted: 0, accepted: 0, refused: 0, sessions: 0, lastStatus: 0 })
      const agent = yield* runPushAgent(testPushAgentOptions({ agentId: AGENT, dataDir, verifierUrl: env.url, verifierCa: env.ca }), stats).pipe(Effect.provide(NodeHttpClient.layerUndici), Effect.provide(capture), Effect.fork)
      // refused twice (not enrolled), then the admin enrols it
      yield* Effect.repeat(Ref.get(stats), { until: (s) => s.refused >= 2, schedule: Schedule.spaced("100 millis") })
      yield* enrol
      yield* Effect.repeat(Ref.get(stats), { until: (s) => s.accepted >= 1, schedule: Schedule.spaced("100 millis") })
      yield* Fiber.interrupt(agent)
      const about = logged.filter((l) => /enrol|attestation failed/.test(l)).map((l) => l.replace(/https:\/\/[^\s:]+:\d+/, "<verifier>"))
      expect(about).toEqual([
        "INFO waiting for enrolment at the verifier <verifier> (it refuses a session to an agent it does not hold); asking again every 1 s",
        "INFO enrolled at the verifier <verifier>: attesting"
      ])
    }).pipe(Effect.scoped, Effect.provide(Layer.merge(pushVerifier("sqlite"), simulatedAgent("push-agent-wait")))), 120_000)

  it.live("a PoP proof the verifier refuses (it holds another AK: a re-provisioned machine) is sent again once per interval, not at once in a loop", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("attest-push-agent-pop-")
      const env = yield* PushTestEnv
      // the admin enrolled the AK the machine had before; the agent now has a new one
      const { enrol } = yield* pushAgentIdentity(AGENT, join(dir, "before"))
      yield* enrol
      const stats = yield* Ref.make<PushAgentStats>({ submitted: 0, accepted: 0, refused: 0, sessions: 0, lastStatus: 0 })
      const agent = yield* runPushAgent(testPushAgentOptions({ agentId: AGENT, dataDir: join(dir, "agent"), verifierUrl: env.url, verifierCa: env.ca }), stats).pipe(
        Effect.provide(NodeHttpClient.layerUndici),
        Effect.provide(Logger.replace(Logger.defaultLogger, Logger.none)),
        Effect.fork
      )
      yield* Effect.repeat(Ref.get(stats), { until: (s) => s.refused >= 1, schedule: Schedule.spaced("50 millis") })
      yield* Effect.sleep("2500 millis")
      const s = yield* Ref.get(stats)
      yield* Fiber.interrupt(agent)
      // the 401 came to the proof itself (no token was sent): not a stale token to drop and retry at once
      expect([s.accepted, s.sessions, s.lastStatus]).toEqual([0, 0, 401])
      // attestation interval 1 s: the first proof and two or three more in 2.5 s (was hundreds, until 429)
      expect(s.refused).toBeGreaterThanOrEqual(2)
      expect(s.refused).toBeLessThanOrEqual(5)
    }).pipe(Effect.scoped, Effect.provide(Layer.merge(pushVerifier("sqlite"), simulatedAgent("push-agent-pop")))), 120_000)
})
