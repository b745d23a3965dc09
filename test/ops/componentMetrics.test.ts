/**
 * Two `/metrics` listeners in one process, as `attest up` runs the registrar and the verifier: each
 * serves its own component's metrics (the registrar's registrations, the verifier's attestations)
 * and, of the shared ones, those of its own listeners and database; a metric outside the catalog
 * is served by both; a listener without a component serves everything.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Option } from "effect"
import { MetricsEndpoint, MetricsServer } from "../../src/http/MetricsListener.js"
import { rawRequest } from "../../src/http/client.js"
import { recordAttestation, recordRegistration, unsafeRecordHttpRequest } from "../../src/ops/metrics.js"

const endpoint = (component?: "registrar" | "verifier") =>
  Effect.map(
    Layer.build(MetricsServer.layer({ name: `${component ?? "all"}-metrics`, host: "127.0.0.1", port: 0, ...(component === undefined ? {} : { component }) })),
    (ctx) => Option.getOrThrow(Context.get(ctx, MetricsEndpoint))
  )

const families = (text: string) => new Set(text.split("\n").filter((l) => l.startsWith("# TYPE ")).map((l) => l.split(" ")[2]!))
const series = (text: string, name: string) => text.split("\n").filter((l) => l.startsWith(`${name}{`))

describe("metrics per component", () => {
  it.scoped("each endpoint of one process serves its component's metrics only", () =>
    Effect.gen(function*() {
      yield* recordRegistration("registered")
      yield* recordAttestation("pull", true)
      unsafeRecordHttpRequest("registrar-https", "GET", "/agents/", 200, 0.001)
      unsafeRecordHttpRequest("verifier", "GET", "/agents/:agent_id", 200, 0.001)
      const [registrar, verifier, all] = yield* Effect.all([endpoint("registrar"), endpoint("verifier"), endpoint()])
      const scrape = (base: string) => Effect.map(Effect.orDie(rawRequest({ method: "GET", baseUrl: base, path: "/metrics" })), (r) => r.body)
      const [r, v, a] = yield* Effect.all([scrape(registrar), scrape(verifier), scrape(all)])
      expect({
        registrarHasRegistrations: families(r).has("attest_registrations_total"),
        registrarHasAttestations: families(r).has("attest_attestations_total"),
        verifierHasAttestations: families(v).has("attest_attestations_total"),
        verifierHasRegistrations: families(v).has("attest_registrations_total"),
        registrarListeners: series(r, "attest_http_requests_total").every((l) => l.includes(`listener="registrar-https"`)),
        verifierListeners: series(v, "attest_http_requests_total").every((l) => l.includes(`listener="verifier"`)),
        allHasBoth: families(a).has("attest_registrations_total") && families(a).has("attest_attestations_total")
      }).toEqual({
        registrarHasRegistrations: true,
        registrarHasAttestations: false,
        verifierHasAttestations: true,
        verifierHasRegistrations: false,
        registrarListeners: true,
        verifierListeners: true,
        allHasBoth: true
      })
      expect([series(r, "attest_http_requests_total").length, series(v, "attest_http_requests_total").length]).toEqual([1, 1])
    }))
})
