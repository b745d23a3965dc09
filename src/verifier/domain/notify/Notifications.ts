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
   * `write` (the verdict that causes the message) and the message's rows in one transaction: the
   * rows are stored only if the write won, and never without it. Whether the write won.
   */
  readonly revocationWith: <E, R>(write: Effect.Effect<boolean, E, R>, request: RevocationRequest) => Effect.Effect<boolean, E | VerifierStoreError, R>
}

export class Notifications extends Context.Tag("attest/verifier/Notifications")<Notifications, NotificationsShape>() {}
