/**
 * The pull loops' writes of one process, batched on PostgreSQL (issue 24, "batched writes"): the
 * writes the loops ask for within `database_write_batch_window` seconds (or as soon as
 * `database_write_batch_max` wait) go to the database in ONE transaction. Each is still its own
 * conditional UPDATE with its own answer — won (the row had the loop's generation and owner epoch)
 * or lost (a newer loop or an admin change came first: nothing written) — and the revocation
 * notice a verdict causes is inserted right after it when it won, in the same transaction, so a
 * notice is never stored without its verdict nor a verdict without its notice. Rows are written in
 * agent-id order, so two runners' batches that overlap (ownership moving) lock them in one order.
 *
 * Failures: a statement that fails aborts PostgreSQL's transaction, so the batch is rolled back and
 * each of its writes tried again alone, each in its own transaction: only the write that fails gets
 * its error. A batch that cannot begin or commit fails every waiter with that error; each loop's
 * store retry then applies (it reads its row again), as for a write of its own.
 *
 * The batching is a queue of the loops' writes and one fiber that gathers a window's worth (the first
 * write opens the window) and stores them with `storeBatch`, each waiter completed with its own
 * answer. @effect/sql's `SqlResolver.ordered` behind @effect/experimental's `dataLoader` (the
 * request-batching way) did the same but cost 2.9–3.2 ms of CPU per write against 0.7 ms for the
 * same batch stored directly (Effect's blocked-request machinery over windows of 100 requests,
 * bench/write-batch.ts), and in bench/cluster-fleet.ts its runner kept 0 of 100 agents on schedule
 * where the unbatched one kept 100 (one run on a loaded machine): not used.
 *
 * SQLite (and a window of 0): each write alone, as before. SQLite has one writer and, in WAL mode
 * with synchronous = NORMAL, a commit does not wait for the disk: a batch would save little and
 * hold the only connection, which the API's reads wait for, for the whole batch.
 *
 *   const batcher = yield* makeLoopWriteBatcher        // (scoped) VerifierConfig, SqlClient
 *   const { won } = yield* batcher.submit({ agentId, write: agents.recordVerdict(…), notice })
 */
import { SqlClient, SqlError } from "@effect/sql"
import { Clock, Deferred, Effect, Either, Exit, FiberSet, Option, Queue } from "effect"
import { VerifierConfig } from "../../config/services.js"
import { inTransaction } from "../../db/transaction.js"
import { unsafeRecordLoopWrites } from "../../ops/metrics.js"
import { storeError, type VerifierStoreError } from "../domain/errors.js"
import type { PreparedNotice } from "../domain/notify/Notifications.js"

/** One loop write: the conditional write (true when it won) and the notice stored with it. */
export interface LoopWriteJob {
  readonly agentId: string
  readonly write: Effect.Effect<boolean, VerifierStoreError>
  readonly notice?: PreparedNotice | undefined
  /** The clock of the loop that asked: the write's timestamps are its (set by `submit`). */
  readonly clock?: Clock.Clock | undefined
}

export interface WriteOutcome {
  readonly won: boolean
  /** Older notices a full queue dropped to make room for this write's (0 without a notice). */
  readonly dropped: number
}

export interface LoopWriteBatcher {
  /** Stores the write (with its notice) in the next batch; its own answer, or its own error. */
  readonly submit: (job: LoopWriteJob) => Effect.Effect<WriteOutcome, VerifierStoreError>
  /** Whether writes are batched here (PostgreSQL with a window above 0). */
  readonly batched: boolean
}

type Answer = { readonly _tag: "Stored"; readonly outcome: WriteOutcome } | { readonly _tag: "Failed"; readonly error: VerifierStoreError }

/** The write, then its notice's rows if it won, inside the caller's transaction (or its own). */
const storeOne = (job: LoopWriteJob): Effect.Effect<WriteOutcome, VerifierStoreError> => {
  const stored = job.notice === undefined ? Effect.map(job.write, (won) => ({ won, dropped: 0 })) : job.notice.store(job.write)
  return job.clock === undefined ? stored : Effect.withClock(stored, job.clock)
}

const tally = (answers: ReadonlyArray<Answer>) => {
  let won = 0
  let lost = 0
  let failed = 0
  for (const a of answers) {
    if (a._tag === "Failed") failed++
    else if (a.outcome.won) won++
    else lost++
  }
  return { won, lost, failed }
}

const byAgent = (jobs: ReadonlyArray<LoopWriteJob>): ReadonlyArray<number> =>
  jobs.map((_, i) => i).sort((a, b) => (jobs[a]!.agentId < jobs[b]!.agentId ? -1 : jobs[a]!.agentId > jobs[b]!.agentId ? 1 : a - b))

/**
 * One batch: every write in one transaction; if one of them fails, each alone. The answers in the
 * jobs' order; fails (every waiter) only when the transaction itself could not begin or commit.
 */
export const storeBatch = (sql: SqlClient.SqlClient, jobs: ReadonlyArray<LoopWriteJob>): Effect.Effect<ReadonlyArray<Answer>, VerifierStoreError> =>
  Effect.gen(function*() {
    const order = byAgent(jobs)
    const together = yield* Effect.either(inTransaction(sql, Effect.forEach(order, (i) => storeOne(jobs[i]!))))
    if (Either.isRight(together)) {
      const answers: Array<Answer> = new Array(jobs.length)
      order.forEach((jobIndex, k) => (answers[jobIndex] = { _tag: "Stored", outcome: together.right[k]! }))
      unsafeRecordLoopWrites(tally(answers), 1)
      return answers
    }
    if (together.left instanceof SqlError.SqlError) {
      unsafeRecordLoopWrites({ won: 0, lost: 0, failed: jobs.length }, 1)
      return yield* Effect.fail(storeError(`write batch of ${jobs.length}`)(together.left))
    }
    // a write failed and PostgreSQL aborted the transaction (rolled back): each alone now
    if (jobs.length > 1) yield* Effect.logWarning(`a batch of ${jobs.length} loop writes failed (${together.left.message}); writing each alone`)
    const answers: Array<Answer> = new Array(jobs.length)
    for (const i of order) {
      const alone = yield* Effect.either(inTransaction(sql, storeOne(jobs[i]!)))
      answers[i] = Either.isRight(alone)
        ? { _tag: "Stored", outcome: alone.right }
        : { _tag: "Failed", error: alone.left instanceof SqlError.SqlError ? storeError("loop write")(alone.left) : alone.left }
    }
    unsafeRecordLoopWrites(tally(answers), 1 + jobs.length)
    return answers
  })

/** A write on its own: one transaction (the statement's, or the notice's with it). */
const alone = (job: LoopWriteJob) =>
  Effect.exit(storeOne(job)).pipe(
    Effect.tap((exit) =>
      Effect.sync(() =>
        unsafeRecordLoopWrites(
          exit._tag === "Failure" ? { won: 0, lost: 0, failed: 1 } : exit.value.won ? { won: 1, lost: 0, failed: 0 } : { won: 0, lost: 1, failed: 0 },
          1
        )
      )
    ),
    Effect.flatten
  )

interface Pending {
  readonly job: LoopWriteJob
  readonly done: Deferred.Deferred<WriteOutcome, VerifierStoreError>
}

/** Each waiter gets its answer, or the batch's failure (an error, a defect, an interruption). */
const settle = (batch: ReadonlyArray<Pending>, exit: Exit.Exit<ReadonlyArray<Answer>, VerifierStoreError>) =>
  Effect.forEach(batch, (p, i) => {
    if (Exit.isFailure(exit)) return Deferred.failCause(p.done, exit.cause)
    const a = exit.value[i]!
    return a._tag === "Stored" ? Deferred.succeed(p.done, a.outcome) : Deferred.fail(p.done, a.error)
  }, { discard: true })

/** Cluster mode's batch window when the option is left at "auto" (single-process mode: 0, each write alone). */
export const CLUSTER_BATCH_WINDOW = 0.1

/** The batch window in seconds the section asks for ("auto": batched in cluster mode only). */
export const batchWindowOf = (c: { readonly database_write_batch_window: number | "auto"; readonly cluster: boolean }): number =>
  c.database_write_batch_window === "auto" ? (c.cluster ? CLUSTER_BATCH_WINDOW : 0) : c.database_write_batch_window

export const makeLoopWriteBatcher = Effect.gen(function*() {
  const config = yield* VerifierConfig
  const sql = yield* SqlClient.SqlClient
  const windowMs = Math.round(batchWindowOf(config) * 1000)
  const max = config.database_write_batch_max
  const pg = sql.onDialectOrElse({ pg: () => true, orElse: () => false })
  if (!pg || windowMs <= 0) return { submit: alone, batched: false } satisfies LoopWriteBatcher

  // without an OTLP exporter nobody reads the batch's spans (as for the loops themselves)
  const traced = config.otlp_endpoint.trim() !== ""
  const waiting = yield* Queue.unbounded<Pending>()
  // a batch that fills before its window ends is sent at once
  const full = yield* Queue.sliding<void>(1)
  const batches = yield* FiberSet.make<void>()
  // writes submitted for the window being gathered (the first one is already out of the queue)
  let inWindow = 0

  const gather = Effect.gen(function*() {
    const first = yield* Queue.take(waiting)
    if (max > 1) yield* Effect.race(Effect.sleep(windowMs), Queue.take(full))
    yield* Queue.takeAll(full)
    const batch = [first, ...(yield* Queue.takeUpTo(waiting, max - 1))]
    // what is left waiting belongs to the next window
    inWindow = Option.getOrElse(waiting.unsafeSize(), () => 0)
    if (inWindow >= max) yield* Queue.offer(full, undefined)
    const run = Effect.exit(storeBatch(sql, batch.map((p) => p.job))).pipe(
      Effect.flatMap((exit) => settle(batch, exit)),
      Effect.withTracerEnabled(traced)
    )
    // batches may overlap (one slow to commit while the next window gathers): the pool bounds them
    yield* FiberSet.run(batches, run)
  })
  // the window is wall time (the database's batching), whatever clock the loops run on (TestClock
  // in tests); each write still takes its timestamps from its loop's clock
  yield* Effect.forkScoped(Effect.forever(gather).pipe(Effect.withClock(Clock.make())))

  const submit = (job: LoopWriteJob): Effect.Effect<WriteOutcome, VerifierStoreError> =>
    Effect.clockWith((clock) =>
      Effect.flatMap(Deferred.make<WriteOutcome, VerifierStoreError>(), (done) =>
        Queue.offer(waiting, { job: { ...job, clock }, done }).pipe(
          Effect.zipRight(Effect.suspend(() => (++inWindow >= max ? Queue.offer(full, undefined) : Effect.void))),
          Effect.zipRight(Deferred.await(done))
        ))
    )
  return { submit, batched: true } satisfies LoopWriteBatcher
})
