/**
 * SQLite's WAL checkpoints on a thread of their own. With the automatic checkpoint, the commit that
 * takes the WAL past 1,000 pages copies them into the database file and syncs it, on the connection
 * that committed: the event loop, which serves every agent. On this project's test machine such a
 * commit held the thread 15–90 ms (3.6 s over 60,000 single-row commits of 3 KB rows, against
 * 0.1 s with the checkpoints on a worker; /work/runs/ckpt3.mjs in the session notes): the pull loops
 * and the API waited for the disk.
 *
 * So the main connection's automatic checkpoint is off and a worker thread with its own connection
 * runs a PASSIVE checkpoint every `everyMs` (it never waits for the writer and the writer never waits
 * for it); when the WAL has grown past `truncateFrames` anyway (a writer that never pauses), it asks
 * for a TRUNCATE without waiting (busy timeout 0: tried again on the next tick). If the worker
 * cannot start or dies, the automatic checkpoint is turned back on and a warning says so: the WAL
 * never grows without bound. An in-memory database has no WAL and gets no worker; until the worker
 * starts (`startAfterMs` after the database opens) the connection checkpoints by itself as before.
 *
 *   yield* walCheckpointer(filename)   // scoped, with the SqlClient of that file (Sql.ts does it for every SQLite database)
 */
import { SqlClient } from "@effect/sql"
import { Deferred, Effect, Scope } from "effect"
import { createRequire } from "node:module"
import { Worker } from "node:worker_threads"

export interface CheckpointReport {
  /** Frames in the WAL and frames of it copied into the database after the checkpoint. */
  readonly log: number
  readonly checkpointed: number
  readonly busy: boolean
}

export interface CheckpointerOptions {
  readonly everyMs: number
  readonly truncateFrames: number
  /** The worker starts this long after the database opens (a short-lived process, a test, never needs one). */
  readonly startAfterMs: number
  /** The SQLite driver the worker loads (better-sqlite3, resolved from here; tests give another to see the fallback). */
  readonly driver?: string | undefined
}

const DEFAULTS: CheckpointerOptions = { everyMs: 1000, truncateFrames: 16_384, startAfterMs: 5000 }
/** SQLite's own default, restored when the worker is gone. */
const AUTOCHECKPOINT_PAGES = 1000

const reports = new Map<string, CheckpointReport>()
/** The last checkpoint the worker of `filename` made that had frames to copy (tests, diagnostics). */
export const lastCheckpoint = (filename: string): CheckpointReport | undefined => reports.get(filename)

// plain CommonJS: the same text runs from the sources (tsx) and from the bundle
const WORKER = `
const { parentPort, workerData } = require("node:worker_threads")
const Database = require(workerData.module)
const db = new Database(workerData.filename, { fileMustExist: true, timeout: 0 })
const tick = () => {
  try {
    let r = db.pragma("wal_checkpoint(PASSIVE)")[0]
    if (r.log > workerData.truncateFrames) r = db.pragma("wal_checkpoint(TRUNCATE)")[0]
    if (r.log > 0 || r.busy) parentPort.postMessage({ log: r.log, checkpointed: r.checkpointed, busy: r.busy !== 0 })
  } catch (e) {
    parentPort.postMessage({ error: String(e && e.message || e) })
  }
}
const timer = setInterval(tick, workerData.everyMs)
parentPort.on("message", () => {
  clearInterval(timer)
  tick()
  db.close()
  parentPort.close()
})
`

/** Checkpoints `filename`'s WAL on a worker thread while the scope lasts (none for ":memory:"). */
export const walCheckpointer = (filename: string, options: Partial<CheckpointerOptions> = {}) =>
  Effect.gen(function*() {
    if (filename === ":memory:") return
    const o = { ...DEFAULTS, ...options }
    const scope = yield* Effect.scope
    yield* Effect.forkScoped(Effect.zipRight(Effect.sleep(o.startAfterMs), Scope.extend(startWorker(filename, o), scope)))
  })

const startWorker = (filename: string, o: CheckpointerOptions) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const module = o.driver ?? createRequire(import.meta.url).resolve("better-sqlite3")
    const gone = yield* Deferred.make<string>()
    yield* Effect.acquireRelease(
      Effect.sync(() => {
        const w = new Worker(WORKER, { eval: true, workerData: { module, filename, everyMs: o.everyMs, truncateFrames: o.truncateFrames } })
        w.on("message", (m: CheckpointReport | { readonly error: string }) => {
          if ("error" in m) Deferred.unsafeDone(gone, Effect.succeed(`its checkpoint failed: ${m.error}`))
          else reports.set(filename, m)
        })
        w.on("error", (e) => Deferred.unsafeDone(gone, Effect.succeed(`it failed: ${e.message}`)))
        w.on("exit", (code) => Deferred.unsafeDone(gone, Effect.succeed(`it exited (${code})`)))
        w.unref()
        return w
      }),
      (w) =>
        Effect.async<void>((resume) => {
          // the worker's last checkpoint, then it closes its connection and ends; a stuck one is ended
          const timer = setTimeout(() => void w.terminate().finally(() => resume(Effect.void)), 2000)
          w.once("exit", () => (clearTimeout(timer), resume(Effect.void)))
          w.postMessage("stop")
        })
    )
    yield* sql`PRAGMA wal_autocheckpoint = 0`
    // a worker that cannot run: the connection checkpoints by itself again, and the log says why
    yield* Effect.forkScoped(
      Deferred.await(gone).pipe(
        Effect.flatMap((why) =>
          Effect.zipRight(
            sql.unsafe(`PRAGMA wal_autocheckpoint = ${AUTOCHECKPOINT_PAGES}`),
            Effect.logWarning(`SQLite ${filename}: the WAL checkpoint thread stopped (${why}); the database connection checkpoints by itself again`)
          )
        ),
        Effect.catchAll((e) => Effect.logError(`SQLite ${filename}: could not turn the automatic checkpoint back on: ${e.message}`))
      )
    )
  }).pipe(Effect.catchAll((e) => Effect.logWarning(`SQLite ${filename}: the WAL checkpoint thread did not start (${e.message}); the connection checkpoints by itself`)))
