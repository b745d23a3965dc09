/**
 * The verifier's metrics listener: after verify/evidence requests over HTTPS, GET /metrics counts
 * them by model and result (attest_attestations_total{model="evidence"}), their failure types, their
 * quote and IMA check durations, and the HTTP requests by route template.
 */
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Option } from "effect"
import { MetricsEndpoint, MetricsServer } from "../../src/http/MetricsListener.js"
import { rawRequest } from "../../src/http/client.js"
import { testDatabase } from "../support/db.js"
import { parseExposition, valueOf } from "../support/prometheus.js"
import { makeTestPki, removePki, startVerifier, vcall } from "./apiHarness.js"
import { record } from "./support.js"

const pki = makeTestPki()
afterAll(() => removePki(pki))

describe("verifier metrics", () => {
  it.scopedLive("counts verify/evidence verdicts and HTTP requests, read back from GET /metrics", () =>
    Effect.gen(function*() {
      const v = yield* startVerifier({ pki, db: yield* testDatabase("sqlite") })
      const ctx = yield* Layer.build(MetricsServer.layer({ name: "verifier-metrics", host: "127.0.0.1", port: 0 }))
      const base = Option.getOrThrow(Context.get(ctx, MetricsEndpoint))
      const scrape = Effect.map(Effect.orDie(rawRequest({ method: "GET", baseUrl: base, path: "/metrics" })), (r) => parseExposition(r.body))
      const count = (e: ReturnType<typeof parseExposition>, name: string, labels: Record<string, string>) => valueOf(e, name, labels) ?? 0
      const before = yield* scrape
      for (const id of ["ver-evidence-ok-runtime-policy", "ver-evidence-policy-fail", "ver-evidence-policy-fail"]) {
        expect((yield* vcall(pki, v, { method: "POST", path: "/v2.6/verify/evidence", json: record(id).request.body })).status).toBe(200)
      }
      expect((yield* vcall(pki, v, { method: "GET", path: "/v2.6/nothing-here" })).status).toBe(404)
      expect((yield* vcall(pki, v, { method: "PUT", path: "/v2.6/agents/x" })).status).toBe(405)
      const after = yield* scrape
      expect(count(after, "attest_attestations_total", { model: "evidence", result: "valid" }) - count(before, "attest_attestations_total", { model: "evidence", result: "valid" })).toBe(1)
      expect(count(after, "attest_attestations_total", { model: "evidence", result: "invalid" }) - count(before, "attest_attestations_total", { model: "evidence", result: "invalid" })).toBe(2)
      const failure = { model: "evidence", failure_type: "ima.validation.ima-ng.not_in_allowlist" }
      expect(count(after, "attest_attestation_failures_total", failure) - count(before, "attest_attestation_failures_total", failure)).toBe(2)
      // each verdict's quote and IMA stages in their histograms (src/ops/stages.ts)
      for (const check of ["quote", "ima"]) {
        expect([check, count(after, "attest_check_duration_seconds_count", { check }) - count(before, "attest_check_duration_seconds_count", { check })]).toEqual([check, 3])
      }
      const route = { listener: "verifier", method: "POST", route: "/verify/evidence", status: "200" }
      expect(count(after, "attest_http_requests_total", route) - count(before, "attest_http_requests_total", route)).toBe(3)
      // paths no API route serves never become labels
      const unmatched = (status: string) => ({ listener: "verifier", method: status === "404" ? "GET" : "PUT", route: "unmatched", status })
      expect(count(after, "attest_http_requests_total", unmatched("404")) - count(before, "attest_http_requests_total", unmatched("404"))).toBe(1)
      expect(count(after, "attest_http_requests_total", unmatched("405")) - count(before, "attest_http_requests_total", unmatched("405"))).toBe(1)
    }))
})
