/**
 * An agent that never answers, under TestClock: the loop retries at Keylime's backoff
 * (retry_interval ** n: 2, 4, 8, 16, 32 s), stores GET_QUOTE_RETRY (4) with the retry count, and
 * after max_retries gives up: FAILED (7) with `internal.verifier.not_reachable`. The AgentClient is
 * one that fails as a closed port does; what is under test is the loop's timing.
 */
import { describe, expect, it } from "@effect/vitest"
import { Clock, Context, Effect, Layer, Option, TestClock } from "effect"
import { AgentClient, AgentRequestFailed } from "../../src/verifier/pull/AgentClient.js"
import { Agents } from "../../src/verifier/domain/Agents.js"
import { VerifierClientTls } from "../../src/verifier/pull/ClientTls.js"
import { pollerWithClient } from "../../src/verifier/pull/Poller.js"
import { PolicyCache } from "../../src/verifier/domain/policy/PolicyCache.js"
import { Policies } from "../../src/verifier/domain/policy/Policies.js"
import { AgentRepo } from "../../src/verifier/domain/repo/AgentRepo.js"
import { MbPolicyRepo, RuntimePolicyRepo } from "../../src/verifier/domain/repo/PolicyRepo.js"
import { DbLive } from "../../src/db/Sql.js"
import { testDatabase } from "../support/db.js"
import { waitFor } from "./pollerSupport.js"
import { testConfig, validBody } from "./support.js"

const agentId = "unreach0-d2f1-4a97-9ef7-75bd81c0c001"

/** Fails every request as a refused connection would, recording when (Clock) each came. */
const unreachableClient = (attempts: Array<number>) =>
  Layer.succeed(AgentClient, {
    integrityQuote: (t) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        attempts.push(now)
        return Effect.fail(new AgentRequestFailed({ agentId: t.agentId, operation: "quote", kind: "connection", reason: "ECONNREFUSED" }))
      }),
    deliverV: (t) => Effect.fail(new AgentRequestFailed({ agentId: t.agentId, operation: "vkey", kind: "connection", reason: "ECONNREFUSED" })),
    revocation: (t) => Effect.fail(new AgentRequestFailed({ agentId: t.agentId, operation: "revocation", kind: "connection", reason: "ECONNREFUSED" })),
    release: () => Effect.void
  })

describe("an unreachable agent", () => {
  it.scoped("is retried at retry_interval ** n seconds, then FAILED with internal.verifier.not_reachable", () =>
    Effect.gen(function*() {
      const db = yield* testDatabase("sqlite")
      const attempts: Array<number> = []
      const base = Layer.mergeAll(
        DbLive(db, "verifier"),
        testConfig({ retry_interval: 2, exponential_backoff: true, max_retries: 5, quote_interval: 2 }),
        VerifierClientTls.fromPem({ cert: "", key: "" })
      )
      const ctx = yield* Layer.build(
        Layer.mergeAll(Agents.Default, Policies.Default, AgentRepo.Default, RuntimePolicyRepo.Default, MbPolicyRepo.Default, PolicyCache.withCapacity(2))
          .pipe(Layer.provideMerge(pollerWithClient(unreachableClient(attempts))), Layer.provideMerge(base))
      )
      const repo = Context.get(ctx, AgentRepo)
      const row = Effect.map(repo.find(agentId), Option.getOrThrow)
      const t0 = yield* Clock.currentTimeMillis

      yield* Context.get(ctx, Agents).add(agentId, validBody())
      const delays = [2, 4, 8, 16, 32]
      for (const [i, delay] of delays.entries()) {
        yield* waitFor(`attempt ${i + 1}`, Effect.sync(() => attempts.length), (n) => n === i + 1)
        const stored = yield* waitFor(`retry ${i + 1} stored`, row, (r) => r.retry_count === i + 1)
        expect([stored.operational_state, stored.next_poll_at]).toEqual([4, Math.floor((attempts[i]! + delay * 1000) / 1000)])
        // one second early nothing happens; at the delay the next attempt is made
        yield* TestClock.adjust(`${delay - 1} seconds`)
        yield* Effect.promise(() => new Promise((r) => setTimeout(r, 50)))
        expect(attempts.length).toBe(i + 1)
        yield* TestClock.adjust("1 second")
      }
      yield* waitFor("attempt 6", Effect.sync(() => attempts.length), (n) => n === 6)
      expect(attempts.map((a) => (a - t0) / 1000)).toEqual([0, 2, 6, 14, 30, 62])
      const failed = yield* waitFor("FAILED", row, (r) => r.operational_state === 7)
      expect([failed.last_event_id, failed.severity_level, failed.attestation_count]).toEqual(["internal.verifier.not_reachable", 6, 0])
    }), 120_000)
})
