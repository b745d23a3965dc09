/**
 * The webhook notifier against a real HTTP receiver: a message queued while the receiver answers
 * 503 stays in the outbox and is retried with backoff until the receiver is up, then delivered
 * (signed with the agent's revocation_key: the signature verifies); the queue is bounded (the
 * oldest dropped); queuing never waits for a delivery.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Option } from "effect"
import * as crypto from "node:crypto"
import { AgentClient, AgentRequestFailed } from "../../src/verifier/pull/AgentClient.js"
import { Agents } from "../../src/verifier/domain/Agents.js"
import { Notifications } from "../../src/verifier/domain/notify/Notifications.js"
import { NotifiersLive, notificationBackoff } from "../../src/verifier/pull/NotifiersLive.js"
import { AgentRepo } from "../../src/verifier/domain/repo/AgentRepo.js"
import { NotificationOutbox } from "../../src/verifier/domain/repo/NotificationOutbox.js"
import { testDatabase } from "../support/db.js"
import { waitFor, webhookReceiver } from "./pollerSupport.js"
import { backends, validBody, verifierLayer } from "./support.js"

const agentId = "notify00-d2f1-4a97-9ef7-75bd81c0c001"
const keys = crypto.generateKeyPairSync("rsa", { modulusLength: 2048 })
const revocationKey = keys.privateKey.export({ type: "pkcs8", format: "pem" }).toString()

const noAgents = Layer.succeed(AgentClient, {
  integrityQuote: (t) => Effect.fail(new AgentRequestFailed({ agentId: t.agentId, operation: "quote", kind: "connection", reason: "unused" })),
  deliverV: (t) => Effect.fail(new AgentRequestFailed({ agentId: t.agentId, operation: "vkey", kind: "connection", reason: "unused" })),
  revocation: (t) => Effect.fail(new AgentRequestFailed({ agentId: t.agentId, operation: "revocation", kind: "connection", reason: "unused" })),
  release: () => Effect.void
})

describe("notification backoff", () => {
  it("doubles from notification_retry_interval up to notification_max_interval", () => {
    expect([1, 2, 3, 4, 5, 10].map((n) => notificationBackoff(n, 2, 20))).toEqual([2, 4, 8, 16, 20, 20])
  })
})

for (const [backend, available] of backends) describe.skipIf(!available)(`webhook notifier on ${backend}`, () => {
  it.scopedLive("keeps a message while the webhook is down and delivers it when it is up; the queue is bounded", () =>
    Effect.gen(function*() {
      const webhook = yield* webhookReceiver
      webhook.state.down = true
      const db = yield* testDatabase(backend)
      const config = {
        enabled_revocation_notifications: ["webhook" as const],
        webhook_url: webhook.url,
        notification_retry_interval: 1,
        notification_max_interval: 2,
        notification_queue_size: 2
      }
      const domain = yield* Layer.build(verifierLayer(db, config))
      yield* Context.get(domain, Agents).add(agentId, { ...validBody(), revocation_key: revocationKey })
      const view = Option.getOrThrow(yield* Context.get(domain, AgentRepo).findView(agentId))
      const ctx = yield* Layer.build(
        NotifiersLive.pipe(Layer.provideMerge(Layer.mergeAll(AgentRepo.Default, NotificationOutbox.Default, noAgents)), Layer.provide(Layer.succeedContext(domain)))
      )
      const notifications = Context.get(ctx, Notifications)
      const outbox = Context.get(ctx, NotificationOutbox)
      const event = { eventId: "ima.validation.ima-ng.not_in_allowlist", severityLevel: 6 }

      for (const n of [1, 2, 3]) {
        yield* notifications.revocation({ agent: view, kind: "revocation", event, context: { message: `event ${n}` } })
      }
      // down: attempts are refused, nothing is lost but the oldest beyond the bound
      yield* waitFor("refused attempts", Effect.sync(() => webhook.state.refused), (n) => n >= 3)
      expect(yield* outbox.pending("webhook")).toBe(2)
      // each kept message has been tried and refused (the workers try them one after the other)
      const rows = yield* waitFor(
        "both kept messages refused once",
        outbox.due("webhook", Number.MAX_SAFE_INTEGER, 10),
        (rs) => rs.length === 2 && rs.every((r) => r.attempts >= 1)
      )
      expect(rows.map((r) => r.last_error)).toEqual(["webhook answered 503", "webhook answered 503"])

      webhook.state.down = false
      const bodies = yield* waitFor("both messages at the webhook", Effect.sync(() => webhook.bodies), (b) => b.length === 2, 60_000)
      const messages = (bodies as Array<{ msg: string; signature: string }>).map((b) => {
        const ok = crypto.verify("sha256", Buffer.from(b.msg), {
          key: keys.publicKey,
          padding: crypto.constants.RSA_PKCS1_PSS_PADDING,
          saltLength: crypto.constants.RSA_PSS_SALTLEN_AUTO
        }, Buffer.from(b.signature, "base64"))
        const m = JSON.parse(b.msg)
        return [ok, m.agent_id, m.event_id, JSON.parse(m.context).message]
      })
      // each message retries on its own backoff, so which of the two is due first once the webhook
      // is up depends on how many refusals each had (on a busy machine: either): compared by content
      messages.sort((a, b) => String(a[3]).localeCompare(String(b[3])))
      expect(messages).toEqual([
        [true, agentId, "ima.validation.ima-ng.not_in_allowlist", "event 2"],
        [true, agentId, "ima.validation.ima-ng.not_in_allowlist", "event 3"]
      ])
      yield* waitFor("an empty outbox", outbox.pending("webhook"), (n) => n === 0)
    }), 120_000)
})
