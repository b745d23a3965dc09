/**
 * What the pull loop calls on a failure (machine effect `Notify`): the revocation message
 * (revocation.ts) signed with the agent's `revocation_key`, queued in the outbox for every enabled
 * notifier (`enabled_revocation_notifications`), in the transaction of the verdict that causes it.
 * Queuing is one insert per target; delivery is the workers' (NotifiersLive.ts), so a notifier that
 * is slow or down never holds up an agent's loop.
 */
import { Context, Effect } from "effect"
import type { VerifierStoreError } from "../errors.js"
import type { AgentView } from "../repo/rows.js"

/** The failure event a verdict recorded (the pull loop's machine carries it to `Notify`). */
export interface EventRecord {
  readonly eventId: string
  readonly severityLevel: number
}

export interface RevocationRequest {
  readonly agent: AgentView
  readonly kind: "revocation" | "comm_error"
  readonly event: EventRecord
  /** The failure's context (`{message, …}`). */
  readonly context: Readonly<Record<string, unknown>>
}

export interface NotificationsShape {
  /** Queues the message for every notifier; never fails (a failure to queue is logged). */
  readonly revocation: (request: RevocationRequest) => Effect.Effect<void>
  /**
   * The message's rows, ready to be stored with the verdict that causes it (`store`), and what
   * follows once they are (`stored`: the workers wake). Nothing is stored yet.
   */
  readonly revocationNotice: (request: RevocationRequest) => Effect.Effect<PreparedNotice, VerifierStoreError>
}

/** A revocation message's rows, stored only with the write that causes them. */
export interface PreparedNotice {
  /**
   * `write` (the verdict or failure that causes the message), then the rows if it won, in one
   * transaction: the caller's when it runs inside one (a batch of loop writes), else its own. Whether
   * the write won, and how many older rows a full queue dropped.
   */
  readonly store: <E, R>(write: Effect.Effect<boolean, E, R>) => Effect.Effect<{ readonly won: boolean; readonly dropped: number }, E | VerifierStoreError, R>
  /** After the transaction committed with the rows: warns of what was dropped, wakes the workers. */
  readonly stored: (dropped: number) => Effect.Effect<void>
}

export class Notifications extends Context.Tag("attest/verifier/Notifications")<Notifications, NotificationsShape>() {}
