/**
 * Traces over OTLP/HTTP (src/ops/Tracing.ts) to a receiver in the test: a registrar request that
 * carries a W3C traceparent becomes a server span of that trace (its parent the caller's span,
 * with the route and status) and the domain span below it; the agent's registration carries its
 * trace to the registrar (client span → registrar server span); with no endpoint nothing is sent.
 */
import { NodeHttpClient } from "@effect/platform-node"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import * as crypto from "node:crypto"
import { join } from "node:path"
import { Tracing } from "../../src/ops/Tracing.js"
import { simulatorManufacturerCa, TpmSimulator } from "../../src/tpm/simulator/TpmSimulator.js"
import { registerOnce } from "../../src/agent/Registration.js"
import { rawRequest } from "../../src/http/client.js"
import { V2_VERSIONS } from "../../src/http/versions.js"
import { trustStoreOf } from "../../src/pki/chain.js"
import { Tpm } from "../../src/tpm/Tpm.js"
import { agentBody, makeTestPki, removePki, sqliteLayer, TestRegistrar, testRegistrarLayer } from "../registrar/harness.js"
import { tempDir } from "../agent/support.js"
import { attr, type OtlpSpan, receiver } from "../support/otlp.js"


const pki = makeTestPki()
afterAll(() => removePki(pki))
const ekTrust = trustStoreOf([new crypto.X509Certificate(simulatorManufacturerCa().pem)], "simulator CA")

describe("OTLP traces", () => {
  it.live("a registrar request with a traceparent is exported as a server span of that trace, with its route, status and domain span", () =>
    Effect.gen(function*() {
      const otlp = yield* receiver
      const dir = yield* tempDir("attest-ops-trace-")
      const traceId = crypto.randomBytes(16).toString("hex")
      const callerSpan = crypto.randomBytes(8).toString("hex")
      yield* Effect.scoped(Effect.gen(function*() {
        const ctx = yield* Layer.build(testRegistrarLayer({ pki, ekTrustStore: ekTrust }, sqliteLayer(join(dir, "registrar.sqlite"))))
        const reg = Context.get(ctx, TestRegistrar)
        const { body } = yield* agentBody(yield* Effect.provide(Tpm, TpmSimulator.layer({ seed: "ops-trace" })))
        const r = yield* Effect.orDie(rawRequest({
          method: "POST",
          baseUrl: reg.httpUrl,
          path: "/v2.5/agents/ops-trace-1",
          body: JSON.stringify(body),
          headers: { "content-type": "application/json", traceparent: `00-${traceId}-${callerSpan}-01` }
        }))
        expect(r.status).toBe(200)
      }).pipe(Effect.provide(Tracing.layer({ endpoint: otlp.url, serviceName: "attest-registrar", exportInterval: "200 millis" }))))
      // the layer's scope closed: the exporter flushed what it had
      const ours = otlp.spans.filter((s) => s.traceId === traceId)
      const server = ours.find((s) => s.parentSpanId === callerSpan)
      expect(server).toBeDefined()
      // OTLP/JSON may write an int64 as a number or a decimal string
      const status = attr(server!, "http.response.status_code")
      expect([server!.kind, attr(server!, "http.route"), Number(status?.["intValue"]), attr(server!, "http.request.method")])
        .toEqual([2, { stringValue: "/agents/:agent_id" }, 200, { stringValue: "POST" }])
      const domain = ours.find((s) => s.name === "Registrar.register")
      expect(domain).toBeDefined()
      // the domain span descends from the server span
      const byId = new Map(ours.map((s) => [s.spanId, s]))
      let at: OtlpSpan | undefined = domain
      while (at !== undefined && at.spanId !== server!.spanId) at = at.parentSpanId === undefined ? undefined : byId.get(at.parentSpanId)
      expect(at?.spanId).toBe(server!.spanId)
      expect([...otlp.services]).toEqual(["attest-registrar"])
      expect(otlp.requests.every((r) => r === "POST /v1/traces application/json")).toBe(true)
    }).pipe(Effect.scoped), 120_000)

  it.live("the agent's registration carries its trace to the registrar: the registrar's server span is a child of the agent's client span", () =>
    Effect.gen(function*() {
      const otlp = yield* receiver
      const dir = yield* tempDir("attest-ops-trace-agent-")
      yield* Effect.scoped(Effect.gen(function*() {
        const ctx = yield* Layer.build(Layer.mergeAll(
          testRegistrarLayer({ pki, ekTrustStore: ekTrust }, sqliteLayer(join(dir, "registrar.sqlite"))),
          TpmSimulator.layer({ seed: "ops-trace-agent" }),
          NodeHttpClient.layerUndici
        ))
        const reg = Context.get(ctx, TestRegistrar)
        const tpm = Context.get(ctx, Tpm)
        const ak = yield* tpm.createAk("rsa", { alg: "rsa", bits: 2048, hash: "sha256", scheme: "rsassa" })
        yield* registerOnce({
          registrarUrl: reg.httpUrl,
          agentId: "ops-trace-agent-1",
          ekPublic: yield* tpm.ekPublic("rsa"),
          ekCertificate: yield* tpm.ekCertificate("rsa"),
          ak,
          mtlsCert: "disabled",
          contactIp: "127.0.0.1",
          contactPort: 9002,
          versions: V2_VERSIONS.supported
        }).pipe(Effect.provide(ctx))
      }).pipe(Effect.provide(Tracing.layer({ endpoint: otlp.url, serviceName: "attest-agent", exportInterval: "200 millis" }))))
      const agentSpan = otlp.spans.find((s) => s.name === "Agent.register")
      expect(agentSpan).toBeDefined()
      const trace = otlp.spans.filter((s) => s.traceId === agentSpan!.traceId)
      const byId = new Map(trace.map((s) => [s.spanId, s]))
      const registerServer = trace.find((s) => s.kind === 2 && attr(s, "http.route")?.["stringValue"] === "/agents/:agent_id" && attr(s, "http.request.method")?.["stringValue"] === "POST")
      expect(registerServer).toBeDefined()
      const client = byId.get(registerServer!.parentSpanId ?? "")
      expect(client?.kind).toBe(3)
      expect(trace.some((s) => s.name === "Registrar.activate")).toBe(true)
    }).pipe(Effect.scoped), 120_000)

  it.live("exports nothing without an endpoint", () =>
    Effect.gen(function*() {
      const otlp = yield* receiver
      expect(Tracing.layer({ endpoint: "", serviceName: "attest-registrar" })).toBe(Layer.empty)
      expect(Tracing.fromSection({ otlp_endpoint: "" }, "attest-registrar")).toBe(Layer.empty)
      const dir = yield* tempDir("attest-ops-trace-none-")
      yield* Effect.scoped(Effect.gen(function*() {
        const ctx = yield* Layer.build(
          testRegistrarLayer({ pki, ekTrustStore: ekTrust }, sqliteLayer(join(dir, "registrar.sqlite"))).pipe(
            Layer.provide(Tracing.fromSection({ otlp_endpoint: "" }, "attest-registrar"))
          )
        )
        const r = yield* Effect.orDie(rawRequest({ method: "GET", baseUrl: Context.get(ctx, TestRegistrar).httpUrl, path: "/version" }))
        expect(r.status).toBe(200)
      }))
      yield* Effect.sleep("300 millis")
      expect(otlp.requests).toEqual([])
    }).pipe(Effect.scoped), 120_000)
})
