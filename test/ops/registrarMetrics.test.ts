/**
 * A running registrar's `GET /metrics` (src/http/MetricsListener.ts) after real registrations and
 * activations with a simulated TPM: registrations and activations by result, HTTP requests by
 * listener, method, route template and status, all read back from the exposition; the listener
 * serves nothing else and is off when metrics_port is 0. `GET /openapi.json` is served too.
 */
import { afterAll, describe, expect, layer } from "@effect/vitest"
import { Context, Effect, Layer, Option } from "effect"
import * as crypto from "node:crypto"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { MetricsEndpoint, MetricsServer } from "../../src/http/MetricsListener.js"
import { simulatorManufacturerCa, TpmSimulator } from "../../src/tpm/simulator/TpmSimulator.js"
import { rawRequest } from "../../src/http/client.js"
import { registrarDocument } from "../../src/registrar/openapi.js"
import { PROMETHEUS_CONTENT_TYPE } from "../../src/ops/prometheus.js"
import { trustStoreOf } from "../../src/pki/chain.js"
import { Tpm } from "../../src/tpm/Tpm.js"
import { agentBody, call, makeTestPki, registerAndActivate, removePki, sqliteLayer, TestRegistrar, testRegistrarLayer } from "../registrar/harness.js"
import { parseExposition, valueOf } from "../support/prometheus.js"

const pki = makeTestPki()
afterAll(() => removePki(pki))
const ekTrust = trustStoreOf([new crypto.X509Certificate(simulatorManufacturerCa().pem)], "simulator CA")
const db = sqliteLayer(join(mkdtempSync(join(tmpdir(), "attest-ops-metrics-")), "registrar.sqlite"))
const metrics = MetricsServer.layer({ name: "registrar-metrics", host: "127.0.0.1", port: 0 })
const env = Layer.mergeAll(testRegistrarLayer({ pki, ekTrustStore: ekTrust }, db), metrics, TpmSimulator.layer({ seed: "ops-metrics" }))

const get = (base: string, path: string, method = "GET") => Effect.orDie(rawRequest({ method, baseUrl: base, path }))

describe("registrar metrics", () => {
  layer(env, { timeout: 120_000, excludeTestServices: true })((it) => {
    it.effect("counts registrations, activations and HTTP requests, scraped and parsed from GET /metrics", () =>
      Effect.gen(function*() {
        const reg = yield* TestRegistrar
        const tpm = yield* Tpm
        const base = Option.getOrThrow(yield* MetricsEndpoint)
        const scrape = Effect.map(get(base, "/metrics"), (r) => parseExposition(r.body))
        const before = yield* scrape

        yield* registerAndActivate(pki, reg, tpm, "ops-metrics-1")
        const second = yield* registerAndActivate(pki, reg, tpm, "ops-metrics-2")
        // refused: an AK that is not a TPM public area; an activation with a wrong tag for an active agent
        const bad = yield* agentBody(tpm)
        const refused = yield* call(pki, reg, {
          method: "POST",
          path: "/v2.5/agents/ops-metrics-3",
          port: "http",
          json: { ...bad.body, aik_tpm: Buffer.from("not a TPM2B_PUBLIC").toString("base64") }
        })
        expect(refused.status).toBe(400)
        // the body is what the OpenAPI document says a 400 is: the envelope with code 400, a reason and empty results
        expect(refused.json).toEqual({ code: 400, status: expect.stringContaining("aik_tpm"), results: {} })
        const wrongTag = yield* call(pki, reg, { method: "PUT", path: "/v2.5/agents/ops-metrics-2/activate", port: "http", json: { auth_tag: "00".repeat(48) } })
        expect(wrongTag.status).toBe(400)
        expect(second.ak).toBeDefined()
        const nowhere = yield* call(pki, reg, { method: "GET", path: "/v2.5/nowhere/at/all", port: "http" })
        expect(nowhere.status).toBe(404)

        const response = yield* get(base, "/metrics")
        expect(response.status).toBe(200)
        expect(response.headers["content-type"]).toBe(PROMETHEUS_CONTENT_TYPE)
        const after = parseExposition(response.body)
        const delta = (name: string, labels: Record<string, string>) => (valueOf(after, name, labels) ?? 0) - (valueOf(before, name, labels) ?? 0)
        expect({
          registered: delta("attest_registrations_total", { result: "registered" }),
          invalid: delta("attest_registrations_total", { result: "invalid_data" }),
          activated: delta("attest_activations_total", { result: "activated" }),
          mismatch: delta("attest_activations_total", { result: "auth_tag_mismatch" })
        }).toEqual({ registered: 2, invalid: 1, activated: 2, mismatch: 1 })
        const http = (method: string, route: string, status: string) =>
          delta("attest_http_requests_total", { listener: "registrar-http", method, route, status })
        expect({
          registerOk: http("POST", "/agents/:agent_id", "200"),
          registerRefused: http("POST", "/agents/:agent_id", "400"),
          activateOk: http("PUT", "/agents/:agent_id/activate", "200"),
          unmatched: http("GET", "unmatched", "404")
        }).toEqual({ registerOk: 2, registerRefused: 1, activateOk: 2, unmatched: 1 })
        expect(after.get("attest_http_request_duration_seconds")?.type).toBe("histogram")
        expect(after.get("attest_registrations_total")?.help).toBe("Agent registrations at the registrar, by result")
      }))

    it.effect("serves nothing but GET /metrics on the metrics listener", () =>
      Effect.gen(function*() {
        const base = Option.getOrThrow(yield* MetricsEndpoint)
        expect((yield* get(base, "/")).status).toBe(404)
        expect((yield* get(base, "/metrics", "POST")).status).toBe(405)
      }))

    it.effect("serves its OpenAPI document at GET /openapi.json, public and unversioned, as generated", () =>
      Effect.gen(function*() {
        const reg = yield* TestRegistrar
        for (const port of ["http", "https"] as const) {
          const r = yield* call(pki, reg, { method: "GET", path: "/openapi.json", port, who: "none" })
          expect(r.status).toBe(200)
          expect(r.json).toEqual(JSON.parse(JSON.stringify(registrarDocument())))
        }
      }))
  })
})

describe("the metrics listener from a section", () => {
  layer(Layer.empty)((it) => {
    it.effect("is off (no listener, no endpoint) when metrics_port is 0", () =>
      Effect.gen(function*() {
        const ctx = yield* Layer.build(MetricsServer.fromSection({ metrics_ip: "127.0.0.1", metrics_port: 0 }, "registrar-metrics"))
        expect(Context.get(ctx, MetricsEndpoint)).toEqual(Option.none())
      }).pipe(Effect.scoped))
  })
})
