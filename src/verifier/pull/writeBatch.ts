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
 * The batching is @effect/sql's `SqlResolver.ordered` (one request per write, the answers in order)
 * behind @effect/experimental's `dataLoader`, which gathers the requests of every loop's fiber for
 * the window.
 *
 * SQLite (and a window of 0): each write alone, as before. SQLite has one writer and, in WAL mode
 * with synchronous = NORMAL, a commit does not wait for the disk: a batch would save little and
 * hold the only connection, which the API's reads wait for, for the whole batch.
 *
 *   const batcher = yield* makeLoopWriteBatcher        // (scoped) VerifierConfig, SqlClient
 *   const { won } = yield* batcher.submit({ agentId, write: agents.recordVerdict(…), notice })
 */
import { RequestResolver as Loader } from "@effect/experimental"
import { SqlClient, SqlError, SqlResolver } from "@effect/sql"
import { Clock, Duration, Effect, Either, Schema } from "effect"
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

// requests and answers stay in memory: declared, not encoded (no copy per write)
const Job = Schema.declare((u: unknown): u is LoopWriteJob => typeof u === "object" && u !== null && "write" in u)
const AnswerSchema = Schema.declare((u: unknown): u is Answer => typeof u === "object" && u !== null && "_tag" in u)

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

export const makeLoopWriteBatcher = Effect.gen(function*() {
  const config = yield* VerifierConfig
  const sql = yield* SqlClient.SqlClient
  const windowMs = Math.round(config.database_write_batch_window * 1000)
  const pg = sql.onDialectOrElse({ pg: () => true, orElse: () => false })
  if (!pg || windowMs <= 0) return { submit: alone, batched: false } satisfies LoopWriteBatcher

  // without an OTLP exporter nobody reads the batch's spans (as for the loops themselves)
  const traced = config.otlp_endpoint.trim() !== ""
  const resolver = yield* SqlResolver.ordered("LoopWrite", {
    Request: Job,
    Result: AnswerSchema,
    execute: (jobs) => storeBatch(sql, jobs).pipe(Effect.withTracerEnabled(traced))
  })
  // the window is wall time (the database's batching), whatever clock the loops run on (TestClock in
  // tests); each write still takes its timestamps from its loop's clock
  const loader = yield* Loader.dataLoader(resolver, { window: Duration.millis(windowMs), maxBatchSize: config.database_write_batch_max }).pipe(
    Effect.withClock(Clock.make())
  )
  const execute = resolver.makeExecute(loader)
  const submit = (job: LoopWriteJob): Effect.Effect<WriteOutcome, VerifierStoreError> =>
    Effect.clockWith((clock) => execute({ ...job, clock })).pipe(
      // a request that is not a job or an answer count that differs: a defect of this module
      Effect.catchTags({ ParseError: Effect.die, ResultLengthMismatch: Effect.die }),
      Effect.flatMap((a) => (a._tag === "Stored" ? Effect.succeed(a.outcome) : Effect.fail(a.error)))
    )
  return { submit, batched: true } satisfies LoopWriteBatcher
})
