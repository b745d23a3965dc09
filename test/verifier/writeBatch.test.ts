/**
 * The pull loops' batched writes (src/verifier/pull/writeBatch.ts) on a real PostgreSQL: writes
 * submitted together share one transaction and each keeps its own answer (a stale owner epoch
 * loses alone), a verdict's notice is stored in its transaction only when the verdict won, and a
 * write that fails fails alone (the batch is rolled back and the others written each on its own).
 * SQLite keeps writing each alone. The window "auto" batches in cluster mode only.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Exit, Metric, Option } from "effect"
import { resolveSection } from "../../src/config/load.js"
import { OperationalState } from "../../src/attestation/states.js"
import { Metrics } from "../../src/ops/metrics.js"
import { storeError } from "../../src/verifier/domain/errors.js"
import { EMPTY_MB_POLICY } from "../../src/verifier/domain/policy/mbUpload.js"
import { emptyRuntimePolicyData } from "../../src/verifier/domain/policy/runtimeUpload.js"
import { AgentRepo, type NewAgent } from "../../src/verifier/domain/repo/AgentRepo.js"
import { NotificationOutbox } from "../../src/verifier/domain/repo/NotificationOutbox.js"
import { MbPolicyRepo, RuntimePolicyRepo } from "../../src/verifier/domain/repo/PolicyRepo.js"
import type { PreparedNotice } from "../../src/verifier/domain/notify/Notifications.js"
import { batchWindowOf, type LoopWriteJob, makeLoopWriteBatcher } from "../../src/verifier/pull/writeBatch.js"
import { testDatabase } from "../support/db.js"
import { pgAvailable, verifierLayer } from "./support.js"

const newAgent = (agentId: string): NewAgent => ({
  agent_id: agentId,
  verifier_id: "default",
  operational_state: OperationalState.GET_QUOTE,
  v: null,
  ip: "127.0.0.1",
  port: 9002,
  tpm_policy: "{}",
  vtpm_policy: null,
  meta_data: "{}",
  ak_tpm: "AAAA",
  mtls_cert: null,
  runtime_policy_name: "shared",
  mb_policy_name: "shared",
  ima_sign_verification_keys: "",
  revocation_key: "",
  accept_tpm_hash_algs: ["sha256"],
  accept_tpm_encryption_algs: ["rsa"],
  accept_tpm_signing_algs: ["rsassa"],
  supported_version: "2.2"
})

/** Agents with a loop each (owner epoch 1); the epochs taken. */
const agentsWithLoops = (ids: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const repo = yield* AgentRepo
    yield* (yield* RuntimePolicyRepo).insert("shared", emptyRuntimePolicyData().data)
    yield* (yield* MbPolicyRepo).insert("shared", EMPTY_MB_POLICY)
    for (const id of ids) {
      expect(yield* repo.insert(newAgent(id))).toBe(true)
      expect(yield* repo.takeOwnership(id, "default")).toEqual(Option.some(1))
    }
  })

/** A valid verdict of the loop that holds owner epoch `epoch`. */
const verdict = (agentId: string, epoch: number): Effect.Effect<LoopWriteJob, never, AgentRepo> =>
  Effect.map(AgentRepo, (repo) => ({
    agentId,
    write: repo.recordVerdict(agentId, { generation: 0, ownerEpoch: epoch }, {
      operationalState: OperationalState.GET_QUOTE,
      valid: true,
      receivedAt: 1_700_000_000,
      evaluationState: null,
      nextPollAt: 1_700_000_002
    })
  }))

/** A webhook notice about `agentId`, stored as NotifiersLive stores one (outbox rows with the write). */
const noticeAbout = (agentId: string): Effect.Effect<PreparedNotice, never, NotificationOutbox> =>
  Effect.map(NotificationOutbox, (outbox) => ({
    store: (write) => outbox.withNotices(write, [{ notifier: "webhook", agentId, payload: `{"about":"${agentId}"}` }], 100),
    stored: () => Effect.void
  }))

const counts = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ agent_id: string; attestation_count: unknown }>`SELECT agent_id, attestation_count FROM verifier_agents ORDER BY agent_id`
  return Object.fromEntries(rows.map((r) => [r.agent_id, Number(r.attestation_count)]))
})

const counter = (m: Metric.Metric.Counter<number>) => Effect.map(Metric.value(m), (s) => s.count)
const transactions = counter(Metrics.dbTransactions.series("loop_writes"))
const writes = Effect.all({ won: counter(Metrics.verdictWrites.series("won")), lost: counter(Metrics.verdictWrites.series("lost")), error: counter(Metrics.verdictWrites.series("error")) })

/** Submits every job at once (they land in one window) and waits for each answer. */
const submitTogether = (jobs: ReadonlyArray<LoopWriteJob>) =>
  Effect.flatMap(makeLoopWriteBatcher, (batcher) => {
    expect(batcher.batched).toBe(true)
    return Effect.all(jobs.map((j) => Effect.exit(batcher.submit(j))), { concurrency: "unbounded" })
  })

// a window long enough that every submit of a test lands in it on a loaded machine
const BATCHED = { database_write_batch_window: 0.3, database_write_batch_max: 100 }

describe.skipIf(!pgAvailable)("batched loop writes on PostgreSQL", () => {
  const run = <A, E>(effect: Effect.Effect<A, E, any>) =>
    Effect.gen(function*() {
      const db = yield* testDatabase("pg")
      return yield* effect.pipe(Effect.provide(verifierLayer(db, BATCHED)))
    })

  it.scopedLive("writes a window's verdicts in one transaction; the one with a stale owner epoch loses alone", () =>
    run(Effect.gen(function*() {
      const ids = ["a0", "a1", "a2", "a3", "a4"]
      yield* agentsWithLoops(ids)
      // a newer loop took a2: the loop at epoch 1 is stale for it only
      expect(yield* (yield* AgentRepo).takeOwnership("a2", "default")).toEqual(Option.some(2))
      const tx0 = yield* transactions
      const w0 = yield* writes
      const answers = yield* submitTogether(yield* Effect.all(ids.map((id) => verdict(id, 1))))
      expect(answers.map((a) => Exit.isSuccess(a) ? a.value.won : "failed")).toEqual([true, true, false, true, true])
      expect((yield* transactions) - tx0).toBe(1)
      const w1 = yield* writes
      expect({ won: w1.won - w0.won, lost: w1.lost - w0.lost, error: w1.error - w0.error }).toEqual({ won: 4, lost: 1, error: 0 })
      expect(yield* counts).toEqual({ a0: 1, a1: 1, a2: 0, a3: 1, a4: 1 })
    })))

  it.scopedLive("stores a verdict's notice in its transaction only when the verdict won", () =>
    run(Effect.gen(function*() {
      yield* agentsWithLoops(["n0", "n1", "n2"])
      expect(yield* (yield* AgentRepo).takeOwnership("n1", "default")).toEqual(Option.some(2))
      const jobs = [
        { ...(yield* verdict("n0", 1)), notice: yield* noticeAbout("n0") },
        { ...(yield* verdict("n1", 1)), notice: yield* noticeAbout("n1") },
        yield* verdict("n2", 1)
      ]
      const tx0 = yield* transactions
      const answers = yield* submitTogether(jobs)
      expect(answers.map((a) => Exit.isSuccess(a) ? a.value.won : "failed")).toEqual([true, false, true])
      expect((yield* transactions) - tx0).toBe(1)
      const queued = yield* (yield* NotificationOutbox).due("webhook", Number.MAX_SAFE_INTEGER, 10)
      expect(queued.map((n) => [n.agent_id, n.payload])).toEqual([["n0", `{"about":"n0"}`]])
      expect(yield* counts).toEqual({ n0: 1, n1: 0, n2: 1 })
    })))

  it.scopedLive("a write that fails fails alone: the batch is rolled back and the others are written each on its own", () =>
    run(Effect.gen(function*() {
      yield* agentsWithLoops(["f0", "f2"])
      const sql = yield* SqlClient.SqlClient
      const broken: LoopWriteJob = { agentId: "f1", write: Effect.as(sql`SELECT 1 / 0`, true).pipe(Effect.mapError(storeError("broken write"))) }
      const tx0 = yield* transactions
      const answers = yield* submitTogether([yield* verdict("f0", 1), broken, yield* verdict("f2", 1)])
      expect(answers.map((a) => Exit.isSuccess(a) ? a.value.won : "failed")).toEqual([true, "failed", true])
      const failure = answers[1]!
      expect(Exit.isFailure(failure) && String(failure.cause)).toMatch(/broken write failed/)
      // the batch (rolled back), then each of the three alone; f0 counted once, not twice
      expect((yield* transactions) - tx0).toBe(4)
      expect(yield* counts).toEqual({ f0: 1, f2: 1 })
    })))

  it.scopedLive("a batch that fills before its window ends is sent at once", () =>
    Effect.gen(function*() {
      const db = yield* testDatabase("pg")
      yield* Effect.gen(function*() {
        yield* agentsWithLoops(["m0", "m1", "m2"])
        const started = Date.now()
        const answers = yield* submitTogether(yield* Effect.all(["m0", "m1", "m2"].map((id) => verdict(id, 1))))
        expect(answers.map((a) => Exit.isSuccess(a) ? a.value.won : "failed")).toEqual([true, true, true])
        // the window is a minute: only the full batch could have sent them
        expect(Date.now() - started).toBeLessThan(30_000)
      }).pipe(Effect.provide(verifierLayer(db, { database_write_batch_window: 60, database_write_batch_max: 3 })))
    }))
})

describe("loop writes on SQLite", () => {
  it.scopedLive("are not batched: each write is its own transaction", () =>
    Effect.gen(function*() {
      const db = yield* testDatabase("sqlite")
      const batcher = yield* makeLoopWriteBatcher.pipe(Effect.provide(verifierLayer(db, BATCHED)))
      expect(batcher.batched).toBe(false)
    }))
})

describe("the batch window's default", () => {
  const windowOf = (env: Record<string, string>) => {
    const r = resolveSection("verifier", { env })
    return Either.isRight(r) ? batchWindowOf(r.right.values) : r.left.problems.map((p) => p.reason)
  }
  it("is \"auto\": 0.1 s in cluster mode and 0 (each write alone) without; a value given is used in both", () => {
    expect(windowOf({})).toEqual(0)
    expect(windowOf({ ATTEST_VERIFIER_CLUSTER: "true" })).toEqual(0.1)
    expect(windowOf({ ATTEST_VERIFIER_CLUSTER: "true", ATTEST_VERIFIER_DATABASE_WRITE_BATCH_WINDOW: "auto" })).toEqual(0.1)
    expect(windowOf({ ATTEST_VERIFIER_DATABASE_WRITE_BATCH_WINDOW: "auto" })).toEqual(0)
    expect(windowOf({ ATTEST_VERIFIER_CLUSTER: "true", ATTEST_VERIFIER_DATABASE_WRITE_BATCH_WINDOW: "0" })).toEqual(0)
    expect(windowOf({ ATTEST_VERIFIER_DATABASE_WRITE_BATCH_WINDOW: "0.05" })).toEqual(0.05)
    expect(windowOf({ ATTEST_VERIFIER_DATABASE_WRITE_BATCH_WINDOW: "soon" })).toEqual([
      `expected a number of seconds (not negative) or "auto", got "soon" (from environment variable ATTEST_VERIFIER_DATABASE_WRITE_BATCH_WINDOW)`
    ])
  })
})
