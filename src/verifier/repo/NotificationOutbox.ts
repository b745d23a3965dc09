/**
 * `verifier_notifications`: the outbox between a verdict and the notifiers. Enqueuing never waits
 * for a delivery; a notifier takes what is due, deletes what it delivered and reschedules what
 * failed. Each notifier's queue is bounded: enqueuing past the bound drops the oldest rows and says
 * how many (the caller logs the warning with the agent id).
 */
import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import { nowSeconds } from "../../db/dialect.js"
import { storeError } from "../errors.js"
import { NotificationRow } from "./rows.js"
import { inTransaction } from "../../db/transaction.js"

export interface NewNotification {
  readonly notifier: string
  readonly agentId: string
  /** What the notifier sends (the revocation body JSON, with any target it needs). */
  readonly payload: string
}

const decodeRows = Schema.decodeUnknown(Schema.Array(NotificationRow))
const COLUMNS = "id, notifier, agent_id, payload, attempts, next_attempt_at, last_error, created_at"

export class NotificationOutbox extends Effect.Service<NotificationOutbox>()("attest/verifier/NotificationOutbox", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /**
     * Queues one notification, due now. With `bound` rows already queued for that notifier, the
     * oldest are dropped to make room; returns the new id and the number dropped.
     */
    const enqueue = Effect.fn("NotificationOutbox.enqueue")(function*(n: NewNotification, bound: number) {
      const now = yield* nowSeconds
      return yield* inTransaction(sql, Effect.gen(function*() {
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
      })).pipe(Effect.mapError(storeError("enqueue notification")))
    })

    /** Up to `limit` notifications of a notifier due at `now` (epoch seconds), oldest first. */
    const due = Effect.fn("NotificationOutbox.due")(function*(notifier: string, now: number, limit: number) {
      const rows = yield* sql`SELECT ${sql.literal(COLUMNS)} FROM verifier_notifications
        WHERE notifier = ${notifier} AND next_attempt_at <= ${now} ORDER BY id LIMIT ${limit}`.pipe(
        Effect.mapError(storeError("due notifications"))
      )
      return yield* decodeRows(rows).pipe(Effect.mapError(storeError("due notifications")))
    })

    /** Delivered: removed from the outbox. */
    const delivered = Effect.fn("NotificationOutbox.delivered")(function*(id: number) {
      yield* sql`DELETE FROM verifier_notifications WHERE id = ${id}`.pipe(Effect.mapError(storeError("notification delivered")))
    })

    /** A failed attempt: counted, with its error, and due again at `nextAttemptAt`. */
    const retryLater = Effect.fn("NotificationOutbox.retryLater")(function*(
      id: number,
      attempt: { readonly attempts: number; readonly nextAttemptAt: number; readonly error: string }
    ) {
      yield* sql`UPDATE verifier_notifications SET attempts = ${attempt.attempts},
          next_attempt_at = ${attempt.nextAttemptAt}, last_error = ${attempt.error}
        WHERE id = ${id}`.pipe(Effect.mapError(storeError("notification retry")))
    })

    /** How many notifications a notifier has queued. */
    const pending = Effect.fn("NotificationOutbox.pending")(function*(notifier: string) {
      const rows = yield* sql<{ n: unknown }>`SELECT COUNT(*) AS n FROM verifier_notifications WHERE notifier = ${notifier}`.pipe(
        Effect.mapError(storeError("pending notifications"))
      )
      return Number(rows[0]?.n ?? 0)
    })

    return { enqueue, due, delivered, retryLater, pending } as const
  })
}) {}
