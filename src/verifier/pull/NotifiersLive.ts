/**
 * The revocation notifiers (keylime-wire.md §6, spec §6): `Notifications` queues each message in
 * the outbox (NotificationOutbox, bounded per notifier by `notification_queue_size`, the oldest
 * dropped with a warning) and one background worker per enabled notifier delivers it:
 * - `agent`: POST `/v<version>/notifications/revocation` to every agent of this verifier (the
 *   failing one first), as Keylime's agent notifier does, so each can act on the revocation;
 * - `webhook`: POST the same `{msg, signature}` JSON to `webhook_url`.
 * A failed delivery is retried after `notification_retry_interval` doubling up to
 * `notification_max_interval`, until delivered (or `notification_max_attempts`). Queuing is an
 * insert in the verdict's transaction; the loop never waits for a delivery. The queue lives in the
 * database, so a restart (or a crash right after the verdict) loses nothing either. Each row
 * carries what its delivery needs (the webhook URL of the verifier that judged, the target agent's
 * address), and a worker claims rows before it delivers them (NotificationOutbox.claim), so any
 * process sharing the database delivers each notice once.
 *
 * An idle worker sleeps until a notice is queued here (its wake), the earliest retry it scheduled
 * itself is due, or IDLE_POLL_MS passed (rows due from elsewhere: another process's lapsed claim),
 * not a poll every second; its fiber runs without the tracer unless spans are exported (an idle
 * verifier's CPU went mostly to the claim's spans: bench/verifier-fleet.ts).
 */
import { HttpClient, HttpClientRequest } from "@effect/platform"
import * as crypto from "node:crypto"
import { NodeHttpClient } from "@effect/platform-node"
import { Clock, Context, Effect, Either, Layer, Option, Queue, Schema } from "effect"
import { VerifierConfig } from "../../config/services.js"
import { nowSeconds } from "../../db/dialect.js"
import { recordNotificationDelivery, setNotificationQueueDepth } from "../../ops/metrics.js"
import { AgentClient } from "./AgentClient.js"
import { AgentRepo } from "../domain/repo/AgentRepo.js"
import { type NewNotification, NotificationOutbox } from "../domain/repo/NotificationOutbox.js"
import type { NotificationRow } from "../domain/repo/rows.js"
import { type RevocationBody, revocationBody } from "../../attestation/revocation.js"
import { Notifications, type NotificationsShape, type RevocationRequest } from "../domain/notify/Notifications.js"

export type NotifierName = "agent" | "webhook"

/** Where an `agent` row goes, as the judging verifier knew it when it queued the row. */
const Address = Schema.Struct({
  ip: Schema.String,
  port: Schema.Number,
  mtls_cert: Schema.NullOr(Schema.String),
  api_version: Schema.String
})

/**
 * What a queued row carries: the signed body; for `webhook` the URL of the verifier that judged;
 * for `agent` the agent to send it to and its address (rows queued by older versions lack the
 * last two: the delivering process's webhook_url and the agent's row then stand in).
 */
const Payload = Schema.parseJson(Schema.Struct({
  target: Schema.optional(Schema.String),
  url: Schema.optional(Schema.String),
  address: Schema.optional(Address),
  body: Schema.Struct({ msg: Schema.String, signature: Schema.String })
}))
const encodePayload = Schema.encodeSync(Payload)
const decodePayload = Schema.decodeUnknownEither(Payload)

/** Delay before attempt `attempts + 1`: the first retry after `base`, doubling, at most `max` seconds. */
export const notificationBackoff = (attempts: number, base: number, max: number): number =>
  Math.min(max, base * 2 ** Math.max(0, attempts - 1))

/** Deliveries at once per notifier; a worker claims twice as many rows a round. */
const CONCURRENCY = 8
const DUE_BATCH = CONCURRENCY * 2
/** Rows this process did not queue or retry (another process's lapsed claim) are found within this. */
const IDLE_POLL_MS = 10_000

export const NotifiersLive: Layer.Layer<Notifications, never, VerifierConfig | NotificationOutbox | AgentRepo | AgentClient> = Layer.scoped(
  Notifications,
  Effect.gen(function*() {
    const config = yield* VerifierConfig
    const outbox = yield* NotificationOutbox
    const agents = yield* AgentRepo
    const client = yield* AgentClient
    const http = yield* Layer.build(NodeHttpClient.layerUndici).pipe(Effect.map(Context.get(HttpClient.HttpClient)))
    const enabled = [...new Set(config.enabled_revocation_notifications)] as Array<NotifierName>
    const webhookUrl = config.webhook_url
    const notifiers = enabled.filter((n) => n !== "webhook" || webhookUrl !== "")
    if (enabled.includes("webhook") && webhookUrl === "") {
      yield* Effect.logWarning("[verifier] enabled_revocation_notifications lists webhook but webhook_url is empty: no webhook notifications")
    }
    const wakes = new Map<NotifierName, Queue.Queue<void>>()
    for (const n of notifiers) wakes.set(n, yield* Queue.sliding<void>(1))

    const depth = (n: NotifierName) =>
      outbox.pending(n).pipe(Effect.flatMap((d) => setNotificationQueueDepth(n, d)), Effect.ignore)

    // this process's claims on queued rows; a claim outlives two delivery attempts' timeouts
    const claimer = crypto.randomUUID()
    const leaseSeconds = 2 * config.request_timeout + 30

    const warnDropped = (notifier: string, dropped: number) =>
      dropped > 0
        ? Effect.logWarning(`${notifier} notification queue full (${config.notification_queue_size}): dropped the ${dropped} oldest`)
        : Effect.void

    /** The rows of one revocation message: one per notifier and target, each with what its delivery needs. */
    const noticesOf = (req: RevocationRequest) =>
      Effect.gen(function*() {
        const v = req.agent
        const labels = config.severity_labels
        const input = {
          type: req.kind,
          agent: { agentId: v.agent_id, ip: v.ip, port: v.port, tpmPolicy: v.tpm_policy, metaData: v.meta_data },
          at: yield* Clock.currentTimeMillis,
          event: {
            eventId: req.event.eventId,
            severityLabel: labels[req.event.severityLevel] ?? labels[labels.length - 1] ?? "",
            context: req.context
          }
        }
        const body = revocationBody(input, v.revocation_key)
        // a key that cannot sign (stored by a laxer version): the notice still goes out, unsigned
        if (Either.isLeft(body)) yield* Effect.logError(`revocation message sent unsigned: ${body.left.message}`)
        const signed: RevocationBody = Either.isRight(body) ? body.right : Either.getOrThrow(revocationBody(input, ""))
        const rows: Array<NewNotification> = []
        for (const n of notifiers) {
          if (n === "webhook") rows.push({ notifier: n, agentId: v.agent_id, payload: encodePayload({ url: webhookUrl, body: signed }) })
          else {
            const others = (yield* agents.listViews(v.verifier_id)).filter((o) => o.agent_id !== v.agent_id)
            for (const target of [v, ...others]) {
              const address = { ip: target.ip, port: target.port, mtls_cert: target.mtls_cert, api_version: target.supported_version ?? "2.2" }
              rows.push({ notifier: n, agentId: v.agent_id, payload: encodePayload({ target: target.agent_id, address, body: signed }) })
            }
          }
        }
        return rows
      })

    /** After the rows were stored: the workers wake, the queue depths are measured again. */
    const queued = (req: RevocationRequest) =>
      Effect.gen(function*() {
        for (const n of notifiers) {
          yield* depth(n)
          yield* Queue.offer(wakes.get(n)!, undefined)
        }
        yield* Effect.logInfo(`${req.kind} notification queued for ${notifiers.join(", ") || "no notifier"} (${req.event.eventId})`)
      })

    const revocation: NotificationsShape["revocation"] = (req) =>
      Effect.gen(function*() {
        for (const row of yield* noticesOf(req)) {
          const { dropped } = yield* outbox.enqueue(row, config.notification_queue_size)
          yield* warnDropped(row.notifier, dropped)
        }
        yield* queued(req)
      }).pipe(
        Effect.catchAll((e) => Effect.logError(`revocation notification not queued: ${e.message}`)),
        Effect.annotateLogs("agent_id", req.agent.agent_id),
        Effect.withSpan("Notifications.revocation")
      )

    const revocationNotice: NotificationsShape["revocationNotice"] = (req) =>
      Effect.map(noticesOf(req), (rows) => ({
        store: <E, R>(write: Effect.Effect<boolean, E, R>) => outbox.withNotices(write, rows, config.notification_queue_size),
        stored: (dropped: number) =>
          Effect.zipRight(warnDropped("revocation", dropped), queued(req)).pipe(Effect.annotateLogs("agent_id", req.agent.agent_id))
      }))

    const deliverWebhook = (url: string, body: RevocationBody) =>
      HttpClientRequest.post(url).pipe(
        HttpClientRequest.bodyUnsafeJson(body),
        http.execute,
        Effect.flatMap((res) => res.status >= 200 && res.status < 300 ? Effect.void : Effect.fail(new Error(`webhook answered ${res.status}`))),
        Effect.scoped,
        Effect.timeoutFail({ duration: config.request_timeout * 1000, onTimeout: () => new Error("webhook: no answer within request_timeout") })
      )

    /** One queued row: "delivered", "dropped" (nothing left to deliver to) or the error. */
    const deliver = (notifier: NotifierName, row: NotificationRow) =>
      Effect.gen(function*() {
        const payload = decodePayload(row.payload)
        if (Either.isLeft(payload)) return "dropped" as const
        if (notifier === "webhook") {
          const url = payload.right.url ?? webhookUrl
          if (url === "") return "dropped" as const
          yield* deliverWebhook(url, payload.right.body)
          return "delivered" as const
        }
        const target = payload.right.target ?? row.agent_id
        const address = payload.right.address
        if (address !== undefined) {
          yield* client.revocation(
            { agentId: target, ip: address.ip, port: address.port, mtlsCert: address.mtls_cert, apiVersion: address.api_version },
            payload.right.body
          )
          return "delivered" as const
        }
        const view = yield* agents.find(target)
        if (Option.isNone(view)) return "dropped" as const
        const v = view.value
        yield* client.revocation(
          { agentId: v.agent_id, ip: v.ip, port: v.port, mtlsCert: v.mtls_cert, apiVersion: v.supported_version ?? "2.2" },
          payload.right.body
        )
        return "delivered" as const
      })

    // each worker's retries not yet due (epoch seconds): it wakes for the earliest
    const retriesDue = new Map<NotifierName, Array<number>>(notifiers.map((n) => [n, []]))
    const traced = config.otlp_endpoint.trim() !== ""

    const settle = (notifier: NotifierName, row: NotificationRow) =>
      Effect.either(deliver(notifier, row)).pipe(
        Effect.flatMap((r) =>
          Effect.gen(function*() {
            if (Either.isRight(r)) {
              yield* outbox.delivered(row.id, claimer)
              yield* recordNotificationDelivery(notifier, true)
              return
            }
            const attempts = row.attempts + 1
            yield* recordNotificationDelivery(notifier, false)
            const error = r.left instanceof Error ? r.left.message : String(r.left)
            if (config.notification_max_attempts > 0 && attempts >= config.notification_max_attempts) {
              yield* outbox.delivered(row.id, claimer)
              yield* Effect.logWarning(`${notifier} notification about ${row.agent_id} given up after ${attempts} attempts: ${error}`)
              return
            }
            const after = notificationBackoff(attempts, config.notification_retry_interval, config.notification_max_interval)
            const nextAttemptAt = (yield* nowSeconds) + after
            yield* outbox.retryLater(row.id, { attempts, nextAttemptAt, error }, claimer)
            retriesDue.get(notifier)!.push(nextAttemptAt)
            yield* Effect.logInfo(`${notifier} notification about ${row.agent_id} not delivered (attempt ${attempts}): ${error}; retry in ${after} s`)
          })
        ),
        Effect.withSpan("Notifications.deliver", { attributes: { notifier, agent_id: row.agent_id } })
      )

    /** Until the earliest retry this worker scheduled is due, at most IDLE_POLL_MS (ms). */
    const idleWait = (notifier: NotifierName, nowMs: number) => {
      const due = retriesDue.get(notifier)!.filter((at) => at * 1000 > nowMs)
      retriesDue.set(notifier, due)
      return due.length === 0 ? IDLE_POLL_MS : Math.min(IDLE_POLL_MS, Math.min(...due) * 1000 - nowMs)
    }

    const worker = (notifier: NotifierName) => {
      const wake = wakes.get(notifier)!
      const round = Effect.gen(function*() {
        const now = yield* nowSeconds
        const rows = yield* outbox.claim(notifier, { now, limit: DUE_BATCH, claimer, claimedUntil: now + leaseSeconds })
        if (rows.length > 0) {
          yield* Effect.forEach(rows, (row) => settle(notifier, row), { concurrency: CONCURRENCY, discard: true })
          yield* depth(notifier)
        }
        if (rows.length < DUE_BATCH) yield* Effect.race(Queue.take(wake), Effect.sleep(idleWait(notifier, yield* Clock.currentTimeMillis)))
      }).pipe(
        Effect.catchAll((e) => Effect.zipRight(Effect.logWarning(`${notifier} notifier: ${e.message}`), Effect.sleep(1000)))
      )
      return Effect.forever(round).pipe(Effect.annotateLogs("notifier", notifier), Effect.withTracerEnabled(traced))
    }

    for (const n of notifiers) {
      yield* depth(n)
      yield* Effect.forkScoped(worker(n))
    }
    return { revocation, revocationNotice }
  })
)
