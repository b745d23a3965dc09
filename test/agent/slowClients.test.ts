/**
 * The pull agent's listener cuts off slow clients like every attest listener (issue 22 §6): a
 * client with a trusted certificate that sends its headers one byte at a time, and one that opens
 * TCP and never starts the TLS handshake, are closed once the headers' bound (10 s) has passed.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { join } from "node:path"
import { DEFAULT_LISTENER_TIMEOUTS } from "../../src/http/timeouts.js"
import { holdConnection } from "../support/slowClient.js"
import { makeTestCa, RunningAgent, simulatedAgentLayer, tempDir } from "./support.js"

/** Generous on a loaded machine: before the fix these stayed open 60-120 s. */
const CLOSED_WITHIN_MS = 30_000

describe("agent listener", () => {
  it.scopedLive("closes a slow-header client and one that never starts TLS within the bound", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("attest-agent-slow-")
      const ca = yield* makeTestCa(join(dir, "ca"))
      const ctx = yield* Layer.build(simulatedAgentLayer(
        { agentId: "d432fbb3-d2f1-4a97-9ef7-75bd81c0a5a5", dataDir: join(dir, "agent"), trustedClientCa: ca.caPem },
        { name: "slow-clients" },
        { seed: "agent-slow-clients" }
      ))
      const url = Context.get(ctx, RunningAgent).url
      const client = { cert: ca.clientCert, key: ca.clientKey }
      const held = yield* Effect.all([
        holdConnection({ url, mode: "drip", tls: client, giveUpMs: CLOSED_WITHIN_MS }),
        holdConnection({ url, mode: "drip", tls: client, giveUpMs: CLOSED_WITHIN_MS }),
        holdConnection({ url, mode: "silent", giveUpMs: CLOSED_WITHIN_MS })
      ], { concurrency: "unbounded" })
      console.log(`agent: closed after ${held.map((h) => h.closedAfterMs === undefined ? "still open" : `${(h.closedAfterMs / 1000).toFixed(1)} s`).join(", ")} (two slow-header, one silent)`)
      const closed = held.map((h) => h.closedAfterMs !== undefined && h.closedAfterMs >= DEFAULT_LISTENER_TIMEOUTS.headersMs - 1000)
      expect(closed).toEqual([true, true, true])
      // the slow-header clients had a handshake and get the 408 envelope
      expect(held.slice(0, 2).map((h) => h.received.split("\r\n")[0])).toEqual(["HTTP/1.1 408 Request Timeout", "HTTP/1.1 408 Request Timeout"])
    }), 120_000)
})
