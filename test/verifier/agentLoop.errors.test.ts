/**
 * The AgentLoop service's error channel, on SQLite and PostgreSQL, with the agent's answers
 * scripted (an AgentClient that fails as a real one classifies its failures) and the database
 * failing for real (a table or column renamed away under the loop, then back):
 * - a loop that cannot read its agent's row fails with AgentLoopNotStarted naming the agent and the read;
 * - a policy the database cannot read at the quote is waited out (the loop logs the failed read
 *   and tries again), never a FAILED agent; the quote is asked once the database reads again;
 * - an agent's failed answers are classified: a 503 is retried, a 400 naming the API version is
 *   FAILED with internal.verifier.version_not_supported, another 400 with internal.verifier.no_quote.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Context, type Duration, Effect, Layer, Logger, Option, TestClock } from "effect"
import { DbLive, type DatabaseOptions } from "../../src/db/Sql.js"
import type { VerifierOptions } from "../../src/config/sections.js"
import { AgentClient, AgentRequestFailed, type AgentTarget, type QuoteRequest } from "../../src/verifier/pull/AgentClient.js"
import { Agents } from "../../src/verifier/domain/Agents.js"
import { VerifierClientTls } from "../../src/verifier/pull/ClientTls.js"
import { AgentLoop } from "../../src/verifier/pull/agentLoop.js"
import { NotifiersLive } from "../../src/verifier/pull/NotifiersLive.js"
import { PolicyCache } from "../../src/verifier/domain/policy/PolicyCache.js"
import { PushRepo } from "../../src/verifier/domain/pushStore/repo.js"
import { AgentRepo } from "../../src/verifier/domain/repo/AgentRepo.js"
import { NotificationOutbox } from "../../src/verifier/domain/repo/NotificationOutbox.js"
import { MbPolicyRepo, RuntimePolicyRepo } from "../../src/verifier/domain/repo/PolicyRepo.js"
import { testDatabase } from "../support/db.js"
import { waitFor } from "./pollerSupport.js"
import { backends, testConfig, validBody, verifierLayer } from "./support.js"

const agentId = "looperr0-d2f1-4a97-9ef7-75bd81c0c001"
const config: Partial<VerifierOptions> = { retry_interval: 1, max_retries: 3, quote_interval: 2, enabled_revocation_notifications: [] }

/** An agent answering each quote request with the next scripted HTTP status (and reason); the requests are recorded. */
const scriptedClient = (answers: ReadonlyArray<{ readonly status: number; readonly reason: string }>, asked: Array<QuoteRequest>) =>
  Layer.succeed(AgentClient, {
    integrityQuote: (t: AgentTarget, r: QuoteRequest) =>
      Effect.suspend(() => {
        const answer = answers[Math.min(asked.length, answers.length - 1)]!
        asked.push(r)
        return Effect.fail(new AgentRequestFailed({ agentId: t.agentId, operation: "quote", kind: "http_status", ...answer }))
      }),
    deliverV: (t) => Effect.fail(new AgentRequestFailed({ agentId: t.agentId, operation: "vkey", kind: "connection", reason: "ECONNREFUSED" })),
    revocation: (t) => Effect.fail(new AgentRequestFailed({ agentId: t.agentId, operation: "revocation", kind: "connection", reason: "ECONNREFUSED" })),
    release: () => Effect.void
  })

/** The AgentLoop over its own repositories and policy cache (as in a verifier process), on `db`, with the client given. */
const loopOver = (db: DatabaseOptions, client: Layer.Layer<AgentClient>) =>
  AgentLoop.layer.pipe(
    Layer.provideMerge(NotifiersLive),
    Layer.provideMerge(Layer.mergeAll(AgentRepo.Default, RuntimePolicyRepo.Default, MbPolicyRepo.Default, PushRepo.Default, NotificationOutbox.Default, PolicyCache.withCapacity(2))),
    Layer.provideMerge(Layer.mergeAll(DbLive(db, "verifier"), testConfig(config), VerifierClientTls.fromPem({ cert: "", key: "" }), client))
  )

/** The agent stored by the domain (no loop in its context), and a reader of its row. */
const storedAgent = (db: DatabaseOptions) =>
  Effect.gen(function*() {
    const domain = yield* Layer.build(verifierLayer(db, config))
    yield* Context.get(domain, Agents).add(agentId, validBody())
    const repo = Context.get(domain, AgentRepo)
    return Effect.map(repo.find(agentId), Option.getOrThrow)
  })

/** Advances the TestClock by `step` at a time (the loop's waits) until `read` says `ok`. */
const advanceUntil = <A, E, R>(what: string, step: Duration.DurationInput, read: Effect.Effect<A, E, R>, ok: (a: A) => boolean) =>
  waitFor(what, Effect.zipRight(TestClock.adjust(step), read), ok, 30_000)

for (const [backend, available] of backends) describe.skipIf(!available)(`the agent loop's errors on ${backend}`, () => {
  it.scoped("a loop that cannot read its agent's row does not start: AgentLoopNotStarted names the agent and the read", () =>
    Effect.gen(function*() {
      const db = yield* testDatabase(backend)
      yield* storedAgent(db)
      const ctx = yield* Layer.build(loopOver(db, scriptedClient([{ status: 500, reason: "unused" }], [])))
      const sql = Context.get(ctx, SqlClient.SqlClient)
      yield* sql.unsafe("ALTER TABLE verifier_agents RENAME TO verifier_agents_away")
      const error = yield* Effect.flip(Context.get(ctx, AgentLoop).run(agentId))
      yield* sql.unsafe("ALTER TABLE verifier_agents_away RENAME TO verifier_agents")
      expect([error._tag, error.agentId, error.operation]).toEqual(["AgentLoopNotStarted", agentId, "find agent"])
    }), 60_000)

  it.scoped("a policy the database cannot read is waited out, not a FAILED agent; the quote is asked when it reads again", () =>
    Effect.gen(function*() {
      const db = yield* testDatabase(backend)
      const row = yield* storedAgent(db)
      const asked: Array<QuoteRequest> = []
      const ctx = yield* Layer.build(loopOver(db, scriptedClient([{ status: 400, reason: "API version not supported" }], asked)))
      const sql = Context.get(ctx, SqlClient.SqlClient)
      const logs: Array<string> = []
      const collect = Logger.replace(Logger.defaultLogger, Logger.make(({ message }) => void logs.push(Array.isArray(message) ? message.join(" ") : String(message))))
      // the row and the policies' facts read, the policy's text not: the first quote's policy cannot be compiled
      yield* sql.unsafe("ALTER TABLE verifier_runtime_policies RENAME COLUMN runtime_policy TO runtime_policy_away")
      yield* Effect.forkScoped(Context.get(ctx, AgentLoop).run(agentId).pipe(Effect.provide(collect)))
      yield* waitFor("GET_QUOTE stored", row, (r) => r.operational_state === 3, 30_000)
      const failedRead = (n: number) => (ls: ReadonlyArray<string>) => ls.filter((l) => l.includes("find runtime policy failed")).length >= n
      yield* waitFor("the failed read logged", Effect.sync(() => logs), failedRead(1), 30_000)
      yield* advanceUntil("the read tried again", "1 second", Effect.sync(() => logs), failedRead(3))
      const waiting = yield* row
      expect([waiting.operational_state, waiting.last_event_id, asked.length]).toEqual([3, null, 0])

      yield* sql.unsafe("ALTER TABLE verifier_runtime_policies RENAME COLUMN runtime_policy_away TO runtime_policy")
      // a minute at a time: SQLite's client keeps a statement that failed to prepare for ten minutes (of this clock)
      yield* advanceUntil("the quote asked", "1 minute", Effect.sync(() => asked.length), (n) => n === 1)
      const failed = yield* waitFor("FAILED", row, (r) => r.operational_state === 7)
      expect([failed.last_event_id, failed.attestation_count]).toEqual(["internal.verifier.version_not_supported", 0])
      expect(asked.length).toBe(1)
    }), 60_000)

  it.scoped("an agent's failed answers are classified: a 503 is retried, another 400 is FAILED with no_quote", () =>
    Effect.gen(function*() {
      const db = yield* testDatabase(backend)
      const row = yield* storedAgent(db)
      const asked: Array<QuoteRequest> = []
      const ctx = yield* Layer.build(loopOver(db, scriptedClient([{ status: 503, reason: "busy" }, { status: 400, reason: "bad request" }], asked)))
      yield* Effect.forkScoped(Context.get(ctx, AgentLoop).run(agentId))
      const retrying = yield* waitFor("GET_QUOTE_RETRY stored", row, (r) => r.operational_state === 4)
      expect([retrying.retry_count, asked.length]).toEqual([1, 1])
      yield* advanceUntil("the second quote asked", "1 second", Effect.sync(() => asked.length), (n) => n === 2)
      const failed = yield* waitFor("FAILED", row, (r) => r.operational_state === 7)
      expect([failed.last_event_id, failed.attestation_count, asked.length]).toEqual(["internal.verifier.no_quote", 0, 2])
    }), 60_000)
})
