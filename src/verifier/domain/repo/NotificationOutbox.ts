/**
 * `verifier_notifications`: the outbox between a verdict and the notifiers. A verdict's notices are
 * written in the verdict's own transaction (`withNotices`), so a crash between the two cannot lose
 * them; enqueuing never waits for a delivery. A notifier claims what is due (its process id and a
 * lease in the row: `FOR UPDATE SKIP LOCKED` on PostgreSQL, SQLite's single writer elsewhere), so
 * two processes sharing the database never deliver one notice twice; it deletes what it delivered
 * and reschedules what failed, each only while its claim holds. Each notifier's queue is bounded:
 * enqueuing past the bound drops the oldest rows and says how many (the caller logs the warning).
 */
import { SqlClient, SqlError } from "@effect/sql"
import { Effect, Schema } from "effect"
import { nowSeconds } from "../../../db/dialect.js"
import { inTransaction } from "../../../db/transaction.js"
import { storeError } from "../errors.js"
import { NotificationRow } from "./rows.js"

export interface NewNotification {
  readonly notifier: string
  readonly agentId: string
  /** What the notifier sends (the revocation body JSON, with the target and address it goes to). */
  readonly payload: string
}

const decodeRows = Schema.decodeUnknown(Schema.Array(NotificationRow))
const COLUMNS = "id, notifier, agent_id, payload, attempts, next_attempt_at, last_error, created_at"

export class NotificationOutbox extends Effect.Service<NotificationOutbox>()("attest/verifier/NotificationOutbox", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /** One row, due now, inside the caller's transaction; the oldest dropped past `bound`. */
    const insertBounded = (n: NewNotification, bound: number, now: number) =>
      Effect.gen(function*() {
        const countRows = yield* sql<{ n: unknown }>`SELECT COUNT(*) AS n FROM verifier_notifications WHERE notifier = ${n.notifier}`
        const excess = Number(countRows[0]?.n ?? 0) - Math.max(bound, 1) + 1
        let dropped = 0
        if (excess > 0) {
          const removed = yield* sql`DELETE FROM verifier_notifications WHERE id IN (
              SELECT id FROM verifier_notifications WHERE notifier = ${n.notifier} ORDER BY id LIMIT ${excess}
            ) RETURNING id`
          dropped = removed.length
        }
        const inserted = yield* sql<{ id: unknown }>`INSERT INTO verifier_notifications ${
          sql.insert({
            notifier: n.notifier,
            agent_id: n.agentId,
            payload: n.payload,
            attempts: 0,
            next_attempt_at: now,
            last_error: null,
            created_at: now
          })
        } RETURNING id`
        return { id: Number(inserted[0]!.id), dropped }
      })

    /**
     * Queues one notification, due now. With `bound` rows already queued for that notifier, the
     * oldest are dropped to make room; returns the new id and the number dropped.
     */
    const enqueue = Effect.fn("NotificationOutbox.enqueue")(function*(n: NewNotification, bound: number) {
      const now = yield* nowSeconds
      return yield* inTransaction(sql, insertBounded(n, bound, now)).pipe(Effect.mapError(storeError("enqueue notification")))
    })

    /**
     * `write` (a loop's conditional write) and, only when it reports that it won, `notices`: one
     * transaction, so the verdict and the notices it causes are stored together or not at all.
     * Returns whether the write won and how many old rows the bound dropped.
     */
    const withNotices = <E, R>(write: Effect.Effect<boolean, E, R>, notices: ReadonlyArray<NewNotification>, bound: number) =>
      Effect.flatMap(nowSeconds, (now) =>
        inTransaction(sql, Effect.gen(function*() {
          if (!(yield* write)) return { won: false, dropped: 0 }
          let dropped = 0
          for (const n of notices) dropped += (yield* insertBounded(n, bound, now)).dropped
          return { won: true, dropped }
        }))).pipe(Effect.mapError((e) => e instanceof SqlError.SqlError ? storeError("record verdict with its notices")(e) : e))

    /** Up to `limit` notifications of a notifier due at `now` (epoch seconds), oldest first; claims are not looked at. */
    const due = Effect.fn("NotificationOutbox.due")(function*(notifier: string, now: number, limit: number) {
      const rows = yield* sql`SELECT ${sql.literal(COLUMNS)} FROM verifier_notifications
        WHERE notifier = ${notifier} AND next_attempt_at <= ${now} ORDER BY id LIMIT ${limit}`.pipe(
        Effect.mapError(storeError("due notifications"))
      )
      return yield* decodeRows(rows).pipe(Effect.mapError(storeError("due notifications")))
    })

    /**
     * Up to `limit` due notifications nobody holds a claim on, claimed by `claimer` until
     * `claimedUntil` (epoch seconds), oldest first. A row claimed here is nobody else's until then.
     */
    const claim = Effect.fn("NotificationOutbox.claim")(function*(
      notifier: string,
      c: { readonly now: number; readonly limit: number; readonly claimer: string; readonly claimedUntil: number }
    ) {
      const candidates = sql`SELECT id FROM verifier_notifications
        WHERE notifier = ${notifier} AND next_attempt_at <= ${c.now} AND (claimed_until IS NULL OR claimed_until < ${c.now})
        ORDER BY id LIMIT ${c.limit}`
      const rows = yield* sql`UPDATE verifier_notifications SET claimed_by = ${c.claimer}, claimed_until = ${c.claimedUntil}
        WHERE id IN (${sql.onDialectOrElse({ pg: () => sql`${candidates} FOR UPDATE SKIP LOCKED`, orElse: () => candidates })})
        RETURNING ${sql.literal(COLUMNS)}`.pipe(Effect.mapError(storeError("claim notifications")))
      const decoded = yield* decodeRows(rows).pipe(Effect.mapError(storeError("claim notifications")))
      return [...decoded].sort((a, b) => a.id - b.id)
    })

    /** Only the claimer's own claim (when one is given) settles a row. */
    const claimedBy = (claimer: string | undefined) => claimer === undefined ? sql`1 = 1` : sql`claimed_by = ${claimer}`

    /** Delivered: removed from the outbox. */
    const delivered = Effect.fn("NotificationOutbox.delivered")(function*(id: number, claimer?: string) {
      yield* sql`DELETE FROM verifier_notifications WHERE id = ${id} AND ${claimedBy(claimer)}`.pipe(Effect.mapError(storeError("notification delivered")))
    })

    /** A failed attempt: counted, with its error, due again at `nextAttemptAt`, and no longer claimed. */
    const retryLater = Effect.fn("NotificationOutbox.retryLater")(function*(
      id: number,
      attempt: { readonly attempts: number; readonly nextAttemptAt: number; readonly error: string },
      claimer?: string
    ) {
      yield* sql`UPDATE verifier_notifications SET attempts = ${attempt.attempts},
          next_attempt_at = ${attempt.nextAttemptAt}, last_error = ${attempt.error}, claimed_by = NULL, claimed_until = NULL
        WHERE id = ${id} AND ${claimedBy(claimer)}`.pipe(Effect.mapError(storeError("notification retry")))
    })

    /** How many notifications a notifier has queued. */
    const pending = Effect.fn("NotificationOutbox.pending")(function*(notifier: string) {
      const rows = yield* sql<{ n: unknown }>`SELECT COUNT(*) AS n FROM verifier_notifications WHERE notifier = ${notifier}`.pipe(
        Effect.mapError(storeError("pending notifications"))
      )
      return Number(rows[0]?.n ?? 0)
    })

    return { enqueue, withNotices, due, claim, delivered, retryLater, pending } as const
  })
}) {}
