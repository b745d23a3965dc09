/**
 * The probes that found issue 8's holes, re-run against the pull agent as cheap tests: refused TLS
 * suites, deeply nested JSON, oversized and chunked bodies, and request lines node's parser refuses.
 * Every answer is the envelope.
 */
import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import * as crypto from "node:crypto"
import { join } from "node:path"
import { ALLOWED_TLS12_SUITE, deepJson, rawExchange, REFUSED_SUITES, tlsHandshake } from "../support/probes.js"
import { closeClients, makeTestCa, RunningAgent, simulatedAgentLayer, type TestCa, tempDir } from "./support.js"

const MAX = 64 * 1024

class Env extends Context.Tag("test/agent/probes/Env")<Env, { readonly ca: TestCa }>() {}

const TestLayer = Layer.unwrapScoped(Effect.gen(function*() {
  const dir = yield* tempDir("attest-agent-probes-")
  const ca = yield* makeTestCa(join(dir, "ca"))
  yield* Effect.addFinalizer(() => Effect.sync(closeClients))
  return simulatedAgentLayer(
    { agentId: "probe-agent", dataDir: join(dir, "agent"), trustedClientCa: ca.caPem, maxBodyBytes: MAX },
    { name: "probe-machine" },
    { seed: "probe-agent" }
  )
    .pipe(Layer.merge(Layer.succeed(Env, { ca })))
}))

layer(TestLayer, { timeout: 60_000, excludeTestServices: true })("pull agent under the issue 8 probes", (it) => {
  it.effect("refuses TLS 1.2 suites without forward secrecy or AEAD and accepts ECDHE-GCM and TLS 1.3", () =>
    Effect.gen(function*() {
      const agent = yield* RunningAgent
      const { ca } = yield* Env
      const client = { cert: ca.clientCert, key: ca.clientKey }
      for (const suite of REFUSED_SUITES) {
        const h = yield* Effect.promise(() => tlsHandshake(agent.url, { ciphers: suite, tls12Only: true, client }))
        expect(h, suite).toMatchObject({ ok: false })
      }
      expect(yield* Effect.promise(() => tlsHandshake(agent.url, { ciphers: ALLOWED_TLS12_SUITE, tls12Only: true, client }))).toEqual({
        ok: true,
        protocol: "TLSv1.2",
        cipher: "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"
      })
      expect(yield* Effect.promise(() => tlsHandshake(agent.url, { client }))).toMatchObject({ ok: true, protocol: "TLSv1.3" })
    }))

  const client = Effect.map(Env, ({ ca }) => ({ cert: ca.clientCert, key: ca.clientKey }))
  const envelope = (body: string) => JSON.parse(body) as unknown
  const request = (method: string, path: string, headers: Record<string, string>, body = "") =>
    `${method} ${path} HTTP/1.1\r\nHost: x\r\n${Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join("")}\r\n${body}`

  it.effect("refuses JSON nested 5,000 levels deep with a 400 envelope on every POST route", () =>
    Effect.gen(function*() {
      const agent = yield* RunningAgent
      const cert = yield* client
      const deep = deepJson(5000, "encrypted_key")
      for (const path of ["/v2.5/keys/ukey", "/v2.5/keys/vkey", "/v2.5/notifications/revocation"]) {
        const r = yield* Effect.promise(() =>
          rawExchange(agent.url, [request("POST", path, { "content-type": "application/json", "content-length": String(deep.length) }, deep)], { client: cert })
        )
        expect([path, r.status, envelope(r.body)]).toEqual([path, 400, { code: 400, status: "Malformed JSON body: nested deeper than 64 levels", results: {} }])
      }
    }))

  it.effect("answers an oversized body with the registrar's 413 envelope, declared or chunked", () =>
    Effect.gen(function*() {
      const agent = yield* RunningAgent
      const cert = yield* client
      const big = JSON.stringify({ encrypted_key: crypto.randomBytes(MAX).toString("base64") })
      const expected = { code: 413, status: `Request body exceeds the limit of ${MAX} bytes`, results: {} }
      const declared = yield* Effect.promise(() =>
        rawExchange(agent.url, [request("POST", "/v2.5/keys/vkey", { "content-type": "application/json", "content-length": String(big.length) }, big)], { client: cert })
      )
      expect([declared.status, envelope(declared.body)]).toEqual([413, expected])
      const pieces: Array<string> = [request("POST", "/v2.5/keys/vkey", { "content-type": "application/json", "transfer-encoding": "chunked" })]
      for (let i = 0; i < big.length; i += 8192) {
        const part = big.slice(i, i + 8192)
        pieces.push(`${part.length.toString(16)}\r\n${part}\r\n`)
      }
      pieces.push("0\r\n\r\n")
      const chunked = yield* Effect.promise(() => rawExchange(agent.url, pieces, { client: cert }))
      expect([chunked.status, envelope(chunked.body), chunked.error]).toEqual([413, expected, undefined])
    }))

  it.effect("answers a request line node's parser refuses (raw non-ASCII bytes in the path) with a 400 envelope", () =>
    Effect.gen(function*() {
      const agent = yield* RunningAgent
      const cert = yield* client
      const line = Buffer.concat([Buffer.from("GET /v2.5/keys/"), Buffer.from([0xc3, 0xa9, 0xff]), Buffer.from(" HTTP/1.1\r\nHost: x\r\n\r\n")])
      const r = yield* Effect.promise(() => rawExchange(agent.url, [line], { client: cert }))
      expect([r.status, r.headers["content-type"]]).toEqual([400, "application/json"])
      expect(envelope(r.body)).toEqual({
        code: 400,
        status: expect.stringMatching(/^Bad Request: the request line or headers cannot be parsed \(HPE_/),
        results: {}
      })
    }))
})
