/**
 * What the pull loop calls on a failure (machine effect `Notify`): the revocation message
 * (revocation.ts) signed with the agent's `revocation_key`, queued in the outbox for every enabled
 * notifier (`enabled_revocation_notifications`). Queuing is one insert per target; delivery is the
 * workers' (workers.ts), so a notifier that is slow or down never holds up an agent's loop.
 */
import { Context, Effect } from "effect"
import type { EventRecord } from "../machine.js"
import type { AgentView } from "../repo/rows.js"

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
}

export class Notifications extends Context.Tag("attest/verifier/Notifications")<Notifications, NotificationsShape>() {}
