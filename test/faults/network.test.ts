/**
 * Network faults between the verifier and a pull agent, on SQLite and PostgreSQL: a real agent on a
 * simulated TPM behind a fault-injecting TCP relay (test/support/faultProxy.ts), the real poller
 * over real HTTPS. Latency under `request_timeout` changes nothing; an answer slower than
 * `request_timeout`, a half-open peer and connection resets put the agent in GET_QUOTE_RETRY (4)
 * and it returns to GET_QUOTE (3) as soon as the network does, without counting a failed
 * attestation; only `max_retries` failures in a row make it FAILED (7) with
 * `internal.verifier.not_reachable`. Afterwards the verifier holds no connection to the agent and
 * no more file descriptors than before the faults.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Option } from "effect"
import { readdirSync } from "node:fs"
import { join } from "node:path"
import { Agents } from "../../src/verifier/domain/Agents.js"
import { PollerControl } from "../../src/verifier/domain/PollerControl.js"
import { AgentRepo } from "../../src/verifier/domain/repo/AgentRepo.js"
import { closeClients, makeTestCa, RunningAgent, simulatedAgentLayer, tempDir } from "../agent/support.js"
import { testDatabase } from "../support/db.js"
import { type FaultMode, startFaultProxy } from "../support/faultProxy.js"
import { agentBody, newClientLog, verifierWithPoller, waitFor } from "../verifier/pollerSupport.js"
import { backends } from "../verifier/support.js"

const agentId = "netfault-d2f1-4a97-9ef7-75bd81c0c001"
const openFds = () => readdirSync("/proc/self/fd").length

for (const [backend, available] of backends) describe.skipIf(!available)(`network faults between verifier and agent on ${backend}`, () => {
  it.scopedLive(
    "retries through delay, timeout, half-open and reset; recovers; FAILED only after max_retries; nothing leaks",
    () =>
      Effect.gen(function*() {
        const dir = yield* tempDir("attest-netfault-")
        const ca = yield* makeTestCa(join(dir, "ca"))
        yield* Effect.addFinalizer(() => Effect.sync(closeClients))
        const agent = Context.get(
          yield* Layer.build(simulatedAgentLayer(
            { agentId, dataDir: join(dir, "agent"), trustedClientCa: ca.caPem, revocationCert: ca.clientCert },
            { name: "netfault-machine" },
            { seed: `netfault-${backend}` }
          )),
          RunningAgent
        )
        const proxy = yield* Effect.acquireRelease(
          Effect.promise(() => startFaultProxy({ host: "127.0.0.1", port: agent.port })),
          (p) => Effect.promise(() => p.close())
        )
        const db = yield* testDatabase(backend)
        const log = newClientLog()
        const ctx = yield* Layer.build(verifierWithPoller(db, ca, {
          quote_interval: 1,
          retry_interval: 1,
          exponential_backoff: false,
          max_retries: 4,
          request_timeout: 2
        }, log))
        const repo = Context.get(ctx, AgentRepo)
        const poller = Context.get(ctx, PollerControl)
        const row = Effect.map(repo.find(agentId), Option.getOrThrow)
        const fault = (mode: FaultMode) => Effect.sync(() => proxy.set(mode))

        yield* Context.get(ctx, Agents).add(agentId, { ...agentBody(agent), cloudagent_port: proxy.port })
        const first = yield* waitFor("2 attestations", row, (r) => r.attestation_count >= 2)
        expect(first.operational_state).toBe(3)
        const fdsBefore = openFds()

        // latency well under request_timeout: attestations go on, no retry
        yield* fault({ _tag: "delay", ms: 300 })
        const slow = yield* waitFor("attestations over a slow link", row, (r) => r.attestation_count >= first.attestation_count + 2)
        expect([slow.operational_state, slow.retry_count]).toEqual([3, 0])

        /** One fault: the agent goes to GET_QUOTE_RETRY, then back to GET_QUOTE once the network is back. */
        const faultThenRecover = (mode: FaultMode) =>
          Effect.gen(function*() {
            yield* fault(mode)
            const retrying = yield* waitFor(`GET_QUOTE_RETRY under ${mode._tag}`, row, (r) => r.operational_state === 4 && r.retry_count >= 1)
            expect(retrying.last_event_id).toBe(null)
            const countAtFault = retrying.attestation_count
            yield* fault({ _tag: "pass" })
            const back = yield* waitFor(`GET_QUOTE after ${mode._tag}`, row, (r) => r.operational_state === 3 && r.attestation_count >= countAtFault + 2)
            expect([back.operational_state, back.retry_count, back.severity_level]).toEqual([3, 0, null])
          })
        yield* faultThenRecover({ _tag: "delay", ms: 3_000 }) // an answer slower than request_timeout
        yield* faultThenRecover({ _tag: "blackhole" }) // a half-open peer
        yield* faultThenRecover({ _tag: "reset" })

        // the network stays down: FAILED after max_retries, the loop ends and lets go of its sockets
        yield* fault({ _tag: "refuse" })
        const failed = yield* waitFor("FAILED", row, (r) => r.operational_state === 7)
        expect([failed.last_event_id, failed.severity_level]).toEqual(["internal.verifier.not_reachable", 6])
        expect(yield* waitFor("the loop to end", poller.isOwned(agentId), (owned) => !owned)).toBe(false)
        const quotesAtFail = log.quotes.length
        yield* Effect.promise(() => new Promise((r) => setTimeout(r, 3_000)))
        expect(log.quotes.length).toBe(quotesAtFail) // nothing polls a FAILED agent (its revocation notice is still retried)
        expect(proxy.open()).toBe(0)
        // GC of closed sockets is not immediate; a leak would grow with every fault above
        const fdsAfter = yield* waitFor("file descriptors back", Effect.sync(openFds), (n) => n <= fdsBefore + 2, 30_000)
        expect(fdsAfter).toBeLessThanOrEqual(fdsBefore + 2)
      }),
    300_000
  )
})
