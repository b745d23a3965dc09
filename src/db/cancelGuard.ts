/**
 * Cancels that reach only the statement they were meant for. When a fiber running a statement is
 * interrupted (a timeout, an agent loop stopped because its shard moved to another runner),
 * @effect/sql-pg sends `SELECT pg_cancel_backend(<pid>)` through the pool, and releases the
 * connection when its statement answers or the cancel is done, whichever comes first. The cancel
 * waits for a free connection of the pool like any query; if the statement answers first, its
 * connection goes to the next waiter, and the late cancel then kills that waiter's statement: an
 * agent add or a loop write failed with 57014 "canceling statement due to user request" while a
 * second runner took shards over (a 500 before transient.ts knew the code).
 *
 * So the cancel is sent only while the interrupted statement is still the one running on its
 * connection: each statement is known by the Effect context it was issued in (@effect/sql gives
 * every statement a scope of its own, and the cancel runs in that context), and a connection whose
 * cancel is on its way is not handed to anyone until the cancel is done (PostgreSQL has signalled
 * the backend by then, so the next statement cannot be hit), nor while the interrupted statement
 * still runs on it (the next holder would wait behind it). A cancel that no longer applies is
 * answered at once, unsent. Queries issued without a callback (cursors, promises) are not tracked:
 * their connection is never cancelled, which only lets an interrupted statement run to its end.
 *
 *   const pool = guardCancels(new Pg.Pool({ connectionString, max }))
 */
import { Either, Fiber, Option } from "effect"
import type Pg from "pg"

/** How long a connection waits for its cancel to be sent before it is released anyway (a database gone away). */
const CANCEL_HOLD_MS = 5_000

const CANCEL_TEXT = /^SELECT pg_cancel_backend\((\d+)\)$/

/** A statement sent and not yet answered: the context it was sent in, and the one its connection was taken in. */
interface Sent {
  readonly context: unknown
  readonly lease: unknown
}

interface Tracked {
  /** The statements sent and not yet answered, in the order PostgreSQL runs them. */
  readonly running: Array<Sent>
  /** The context the connection was last taken in (a pooled statement sends from a callback, outside its fiber). */
  lease: unknown
  /** A query without a callback was sent: which statement runs is unknown. */
  untracked: boolean
  /** Cancels of this connection's statement on their way. */
  cancelling: number
  /** Releases held back until those are done and the statements answered. */
  readonly held: Array<() => void>
}

type Callback = (err: Error | undefined, result?: unknown) => void
const NO_ROWS = { rows: [], rowCount: 0 }

/** The Effect context of the running fiber (a statement's own, inside @effect/sql), or undefined outside any fiber. */
const currentStatement = (): unknown => Option.getOrUndefined(Option.map(Fiber.getCurrentFiber(), (f) => f.currentContext))

/** `pool`, whose cancels of interrupted statements can no longer hit another statement. */
export const guardCancels = (pool: Pg.Pool): Pg.Pool => {
  const byPid = new Map<number, Tracked>()
  const trackedOf = new WeakMap<Pg.PoolClient, Tracked>()

  /**
   * A connection is handed to no one while a cancel of its statement is on its way, nor while a
   * statement of its last holder still runs on it (an interrupted one whose cancel did not apply):
   * the next holder would wait behind it, or be hit by its cancel.
   */
  const busy = (t: Tracked) => t.cancelling > 0 || t.running.length > 0
  const flush = (t: Tracked) => {
    // a release that throws (released twice) must not escape into pg's callback and end the process
    if (!busy(t)) for (const release of t.held.splice(0)) Either.try(release)
  }

  const track = (client: Pg.PoolClient): Tracked => {
    const known = trackedOf.get(client)
    if (known !== undefined) return known
    const t: Tracked = { running: [], lease: undefined, untracked: false, cancelling: 0, held: [] }
    trackedOf.set(client, t)
    const pid = (client as unknown as { readonly processID: number | null }).processID
    if (pid !== null) byPid.set(pid, t)
    const query = client.query.bind(client) as (...args: Array<unknown>) => unknown
    ;(client as { query: unknown }).query = (...args: Array<unknown>) => {
      const last = args.at(-1)
      if (typeof last !== "function") {
        t.untracked = true
        return query(...args)
      }
      const statement: Sent = { context: currentStatement(), lease: t.lease }
      const answered = () => {
        const at = t.running.indexOf(statement)
        if (at >= 0) t.running.splice(at, 1)
      }
      t.running.push(statement)
      args[args.length - 1] = (...answer: Array<unknown>) => {
        answered()
        const result = (last as (...a: Array<unknown>) => unknown)(...answer)
        flush(t)
        return result
      }
      try {
        return query(...args)
      } catch (e) {
        // never sent: it will not answer
        answered()
        throw e
      }
    }
    return t
  }

  pool.on("remove", (client) => {
    const pid = (client as unknown as { readonly processID: number | null }).processID
    if (pid !== null && byPid.get(pid) === trackedOf.get(client as Pg.PoolClient)) byPid.delete(pid)
  })

  const connect = pool.connect.bind(pool) as (cb: (err: Error | undefined, client?: Pg.PoolClient, release?: (err?: unknown) => void) => void) => void
  const guardedConnect = (cb?: (err: Error | undefined, client?: Pg.PoolClient, release?: (err?: unknown) => void) => void): unknown => {
    if (cb === undefined) {
      return new Promise((resolve, reject) => guardedConnect((err, client) => (err === undefined || err === null ? resolve(client) : reject(err))))
    }
    const lease = currentStatement()
    connect((err, client, release) => {
      if (err || client === undefined) return cb(err, client, release)
      const t = track(client)
      t.lease = lease
      const original = client.release
      const held = (releaseErr?: unknown) => {
        if (busy(t)) t.held.push(() => original(releaseErr as Error | boolean | undefined))
        else original(releaseErr as Error | boolean | undefined)
      }
      client.release = held
      cb(err, client, held)
    })
    return undefined
  }
  ;(pool as { connect: unknown }).connect = guardedConnect

  const done = (t: Tracked) => {
    t.cancelling = Math.max(0, t.cancelling - 1)
    flush(t)
  }

  /** Sends the cancel when the statement of this fiber's context is the one running on `pid`'s connection. */
  const cancel = (text: string, pid: number, cb: Callback) => {
    const t = byPid.get(pid)
    const statement = t?.running[0]
    const context = currentStatement()
    if (t === undefined || t.untracked || statement === undefined || context === undefined || (statement.context !== context && statement.lease !== context)) {
      return void setImmediate(() => cb(undefined, NO_ROWS))
    }
    t.cancelling++
    let finished = false
    const finish = (err: Error | undefined, result?: unknown) => {
      if (finished) return
      finished = true
      clearTimeout(timer)
      done(t)
      cb(err, result)
    }
    const timer = setTimeout(() => finish(undefined, NO_ROWS), CANCEL_HOLD_MS)
    guardedConnect((err, client) => {
      if (err !== undefined && err !== null) return finish(err)
      // still the same statement once a connection was found: else it answered meanwhile
      if (t.running[0] !== statement) {
        client!.release()
        return finish(undefined, NO_ROWS)
      }
      client!.query(text, (queryErr: Error | undefined, result: unknown) => {
        client!.release(queryErr)
        finish(queryErr ?? undefined, result)
      })
    })
  }

  const query = pool.query.bind(pool) as (...args: Array<unknown>) => unknown
  ;(pool as { query: unknown }).query = (...args: Array<unknown>) => {
    const [text, second, third] = args
    const pid = typeof text === "string" ? CANCEL_TEXT.exec(text)?.[1] : undefined
    const cb = typeof second === "function" ? second : third
    if (pid === undefined || typeof cb !== "function") return query(...args)
    cancel(text as string, Number(pid), cb as Callback)
    return undefined
  }
  return pool
}
