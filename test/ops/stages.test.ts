/**
 * The verification stages of a real attestation (a push agent on a simulated TPM and machine: quote,
 * boot log, IMA list, over HTTPS) as operations see them: each stage's duration is counted in
 * attest_check_duration_seconds{check} read back from GET /metrics, and each is exported over OTLP
 * as a span `verifier.check.<stage>` inside the verification's span, within its start and end.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Option } from "effect"
import { MetricsEndpoint, MetricsServer } from "../../src/http/MetricsListener.js"
import { Tracing } from "../../src/ops/Tracing.js"
import { rawRequest } from "../../src/http/client.js"
import { attestOnce, enrol, openSession, pushVerifier, simulatedAgent, verdict } from "../push/support.js"
import { type OtlpSpan, receiver } from "../support/otlp.js"
import { parseExposition, valueOf } from "../support/prometheus.js"

const AGENT = "5a6e5000-d2f1-4a97-9ef7-75bd81c0ee01"
const STAGES = ["quote", "pcrs", "ima", "boot"] as const

const nanos = (v: string | number | undefined) => BigInt(v ?? 0)

describe("verification stages", () => {
  it.live("a push attestation's quote, tpm_policy, IMA and boot checks each fill their histogram and export their span", () =>
    Effect.gen(function*() {
      const otlp = yield* receiver
      const metrics = Option.getOrThrow(Context.get(yield* Layer.build(MetricsServer.layer({ name: "verifier-metrics", host: "127.0.0.1", port: 0 })), MetricsEndpoint))
      const scrape = Effect.map(Effect.orDie(rawRequest({ method: "GET", baseUrl: metrics, path: "/metrics" })), (r) => parseExposition(r.body))
      const counts = (e: ReturnType<typeof parseExposition>) => STAGES.map((check) => valueOf(e, "attest_check_duration_seconds_count", { check }) ?? 0)
      const before = counts(yield* scrape)

      yield* Effect.scoped(Effect.gen(function*() {
        // a reference state: the verifier asks for the boot log and judges it (accept-all policy: the log must replay to the quote)
        yield* enrol(AGENT, { mb_policy: JSON.stringify({ ok: true }) })
        const session = yield* openSession(AGENT)
        const once = yield* attestOnce(AGENT, session.token!)
        expect(once.submitted?.status).toEqual(202)
        const v = yield* verdict(AGENT)
        expect(v.json.data.attributes.evaluation).toEqual("pass")
        // exported every 200 ms: wait for the batch rather than rely on the flush at close (a loaded machine)
        const deadline = Date.now() + 30_000
        while (otlp.spans.filter((s) => s.name.startsWith("verifier.check.") || s.name === "Attestations.verify").length < 5 && Date.now() < deadline) {
          yield* Effect.sleep("100 millis")
        }
      }).pipe(
        // spans are made only when the verifier exports them (otlp_endpoint), as in production
        Effect.provide(Layer.merge(pushVerifier("sqlite", { otlp_endpoint: otlp.url }), simulatedAgent("ops-stages"))),
        Effect.provide(Tracing.layer({ endpoint: otlp.url, serviceName: "attest-verifier", exportInterval: "200 millis" }))
      ))

      const after = counts(yield* scrape)
      expect(after.map((n, i) => n - before[i]!)).toEqual([1, 1, 1, 1])
      const seconds = valueOf(yield* scrape, "attest_check_duration_seconds_sum", { check: "quote" }) ?? 0
      expect(seconds > 0 && seconds < 10).toBe(true)

      const verify = otlp.spans.filter((s) => s.name === "Attestations.verify")
      expect(verify.length).toBe(1)
      const checks = otlp.spans.filter((s) => s.name.startsWith("verifier.check."))
      expect(checks.map((s) => s.name).sort()).toEqual(["verifier.check.boot", "verifier.check.ima", "verifier.check.pcrs", "verifier.check.quote"])
      const parent = verify[0]!
      for (const s of checks) {
        const span: OtlpSpan = s
        expect([span.traceId, span.parentSpanId]).toEqual([parent.traceId, parent.spanId])
        // measured inside the verification, and in the evaluator's order
        expect(nanos(span.startTimeUnixNano) <= nanos(span.endTimeUnixNano)).toBe(true)
        expect(nanos(span.startTimeUnixNano) >= nanos(parent.startTimeUnixNano) && nanos(span.endTimeUnixNano) <= nanos(parent.endTimeUnixNano)).toBe(true)
      }
      const at = (stage: string) => nanos(checks.find((s) => s.name === `verifier.check.${stage}`)!.startTimeUnixNano)
      expect(at("quote") < at("boot") && at("boot") < at("ima") && at("ima") < at("pcrs")).toBe(true)
    }).pipe(Effect.scoped), 120_000)
})
