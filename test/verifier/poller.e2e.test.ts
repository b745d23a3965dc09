/**
 * The pull loop end to end, in process, over real HTTPS with real certificates, on SQLite and on
 * PostgreSQL: an attest agent on a simulated TPM and machine, the verifier's domain (Agents) and
 * the poller. Added with V → PROVIDE_V → V delivered → GET_QUOTE, quotes keep passing; stop → 10 and
 * the loop is gone; reactivate → polling again; the machine records an unlisted file → 9 with
 * `ima.validation.ima-ng.not_in_allowlist`, and the signed revocation notice reaches the agent
 * (which checks the signature) and a webhook receiver; delete → the row and the loop are gone.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Option } from "effect"
import { join } from "node:path"
import { SimulatedMachine } from "../../src/agent/measurements/SimulatedMachine.js"
import { Agents } from "../../src/verifier/domain/Agents.js"
import { PollerControl } from "../../src/verifier/domain/PollerControl.js"
import { AgentRepo } from "../../src/verifier/domain/repo/AgentRepo.js"
import { NotificationOutbox } from "../../src/verifier/domain/repo/NotificationOutbox.js"
import { MetricsEndpoint, MetricsServer } from "../../src/http/MetricsListener.js"
import { testDatabase } from "../support/db.js"
import { parseExposition, valueOf } from "../support/prometheus.js"
import { closeClients, makeTestCa, RunningAgent, simulatedAgentLayer, tempDir } from "../agent/support.js"
import { Policies } from "../../src/verifier/domain/policy/Policies.js"
import { agentBody, machinePolicyBase64, newClientLog, verifierWithPoller, waitFor, webhookReceiver } from "./pollerSupport.js"
import { backends } from "./support.js"

const agentId = "e2e00000-d2f1-4a97-9ef7-75bd81c0c001"

for (const [backend, available] of backends) describe.skipIf(!available)(`pull loop end to end on ${backend}`, () => {
  it.scopedLive(
    "attests, delivers V, stops, reactivates, catches a tampered machine, notifies, deletes",
    () =>
      Effect.gen(function*() {
        const dir = yield* tempDir("attest-poller-e2e-")
        const ca = yield* makeTestCa(join(dir, "ca"))
        yield* Effect.addFinalizer(() => Effect.sync(closeClients))
        const agentCtx = yield* Layer.build(simulatedAgentLayer(
          { agentId, dataDir: join(dir, "agent"), trustedClientCa: ca.caPem, revocationCert: ca.clientCert },
          { name: "e2e-machine" },
          { seed: `e2e-${backend}` }
        ))
        const agent = Context.get(agentCtx, RunningAgent)
        const machine = Context.get(agentCtx, SimulatedMachine)
        const webhook = yield* webhookReceiver
        const db = yield* testDatabase(backend)
        const log = newClientLog()
        const ctx = yield* Layer.build(verifierWithPoller(db, ca, {
          quote_interval: 1,
          retry_interval: 1,
          max_retries: 3,
          enabled_revocation_notifications: ["agent", "webhook"],
          webhook_url: webhook.url,
          notification_retry_interval: 1
        }, log))
        const agents = Context.get(ctx, Agents)
        const repo = Context.get(ctx, AgentRepo)
        const poller = Context.get(ctx, PollerControl)
        const outbox = Context.get(ctx, NotificationOutbox)
        const row = Effect.map(repo.find(agentId), Option.getOrThrow)
        const metricsUrl = Option.getOrThrow(Context.get(yield* Layer.build(MetricsServer.layer({ name: "verifier-metrics", host: "127.0.0.1", port: 0 })), MetricsEndpoint))
        const scrape = Effect.promise(() => fetch(`${metricsUrl}/metrics`).then((r) => r.text())).pipe(Effect.map(parseExposition))

        // added with V: the first valid quote leads to PROVIDE_V, V reaches the agent, then GET_QUOTE
        yield* agents.add(agentId, agentBody(agent, { revocationKey: ca.clientKey }))
        const attested = yield* waitFor("3 attestations", row, (r) => r.attestation_count >= 3)
        expect([attested.operational_state, attested.v_delivered, attested.hash_alg, attested.enc_alg, attested.sign_alg])
          .toEqual([3, true, "sha256", "rsa2048", "rsassa"])
        expect(log.vkeys).toEqual([{ agentId, ok: true }])
        const asked = log.quotes.filter((q) => q.agentId === agentId).map((q) => q.request)
        // the first quote is full (partial 0) from entry 0; later ones partial from the stored offset
        expect([asked[0]!.partial, asked[0]!.imaEntry, asked[0]!.mask]).toEqual([0, 0, 0x400])
        expect(asked.at(-1)!.partial).toBe(1)
        expect(asked.at(-1)!.imaEntry).toBe(6)
        expect(new Set(asked.map((q) => q.nonce)).size).toBe(asked.length)
        expect(asked.every((q) => /^[A-Za-z0-9]{20}$/.test(q.nonce))).toBe(true)
        expect(attested.last_successful_attestation).toBeGreaterThan(0)

        // the verifier's metrics over GET /metrics (one registry per process: both backends add to it)
        const afterAttesting = yield* scrape
        expect(valueOf(afterAttesting, "attest_attestations_total", { model: "pull", result: "valid" })).toBeGreaterThanOrEqual(3)
        expect(valueOf(afterAttesting, "attest_agents", { state: "get_quote" })).toBeGreaterThanOrEqual(1)
        expect(valueOf(afterAttesting, "attest_check_duration_seconds_count", { check: "quote" })).toBeGreaterThanOrEqual(3)
        const age = valueOf(afterAttesting, "attest_agent_attestation_age_seconds", { agent_id: agentId })
        expect(age !== undefined && age >= 0 && age < 30).toBe(true)

        // stop → 10, the loop is cancelled at once
        yield* agents.stop(agentId)
        expect((yield* row).operational_state).toBe(10)
        expect(yield* poller.isOwned(agentId)).toBe(false)
        const countAtStop = (yield* row).attestation_count
        yield* Effect.promise(() => new Promise((r) => setTimeout(r, 1500)))
        expect((yield* row).attestation_count).toBe(countAtStop)

        // reactivate → polling again (attest departs from Keylime here), V delivered again
        yield* agents.reactivate(agentId)
        expect(yield* poller.isOwned(agentId)).toBe(true)
        const again = yield* waitFor("attestations after reactivate", row, (r) => r.attestation_count >= countAtStop + 2 && r.operational_state === 3)
        expect(again.v_delivered).toBe(true)

        // the runtime policy is replaced while polling: the next quotes are judged with the new one
        yield* Context.get(ctx, Policies).updateRuntime(agentId, { runtime_policy: machinePolicyBase64([{ path: "/usr/bin/newtool", content: "new tool" }]) })
        yield* Effect.promise(() => new Promise((r) => setTimeout(r, 1500)))
        yield* machine.measure("/usr/bin/newtool", "new tool")
        const countBefore = (yield* row).attestation_count
        const stillGood = yield* waitFor("attestations over the new entry", row, (r) => r.attestation_count >= countBefore + 2)
        expect(stillGood.operational_state).toBe(3)

        // the machine runs an unlisted file → INVALID_QUOTE with the IMA failure; polling stops
        yield* machine.measure("/usr/bin/evil", "evil payload")
        const failed = yield* waitFor("INVALID_QUOTE", row, (r) => r.operational_state === 9)
        expect([failed.last_event_id, failed.severity_level, failed.last_event_message]).toEqual(["ima.validation.ima-ng.not_in_allowlist", 6, "File not found in allowlist: /usr/bin/evil (entry 8)"])
        expect(yield* waitFor("the loop to end", poller.isOwned(agentId), (owned) => !owned)).toBe(false)

        // the signed notice reaches the agent (it verifies the signature) and the webhook
        const notice = yield* waitFor("the agent's notice", Effect.sync(() => log.revocations), (r) => r.some((x) => x.ok))
        const accepted = notice.find((x) => x.ok)!
        expect(accepted.agentId).toBe(agentId)
        expect(accepted.body.signature).not.toBe("")
        const msg = JSON.parse(accepted.body.msg)
        expect([msg.type, msg.agent_id, msg.event_id, msg.severity_label, msg.port]).toEqual([
          "revocation",
          agentId,
          "ima.validation.ima-ng.not_in_allowlist",
          "emergency",
          agent.port
        ])
        const hooked = yield* waitFor("the webhook", Effect.sync(() => webhook.bodies), (b) => b.length >= 1)
        expect(hooked[0]).toEqual(accepted.body)
        yield* waitFor("an empty outbox", Effect.zip(outbox.pending("agent"), outbox.pending("webhook")), ([a, w]) => a + w === 0)
        const afterFailure = yield* scrape
        expect(valueOf(afterFailure, "attest_attestations_total", { model: "pull", result: "invalid" })).toBeGreaterThanOrEqual(1)
        expect(valueOf(afterFailure, "attest_attestation_failures_total", { model: "pull", failure_type: "ima.validation.ima-ng.not_in_allowlist" }))
          .toBeGreaterThanOrEqual(1)
        expect(valueOf(afterFailure, "attest_agents", { state: "invalid_quote" })).toBeGreaterThanOrEqual(1)
        expect(valueOf(afterFailure, "attest_notification_deliveries_total", { notifier: "agent", result: "delivered" })).toBeGreaterThanOrEqual(1)
        expect(valueOf(afterFailure, "attest_notification_deliveries_total", { notifier: "webhook", result: "delivered" })).toBeGreaterThanOrEqual(1)
        expect(valueOf(afterFailure, "attest_notification_queue_depth", { notifier: "webhook" })).toBe(0)

        // delete → row gone, no loop
        expect(yield* agents.remove(agentId)).toBe("deleted")
        expect(Option.isNone(yield* repo.find(agentId))).toBe(true)
        expect(yield* poller.isOwned(agentId)).toBe(false)
      }),
    240_000
  )
})
