/**
 * The probes that found issue 8's holes, re-run against both registrar listeners as cheap tests:
 * refused TLS suites, deeply nested JSON, oversized and chunked bodies, and request lines node's
 * parser refuses. Every answer is the envelope.
 */
import { afterAll, describe, expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { emptyTrustStore } from "../../src/pki/chain.js"
import { ALLOWED_TLS12_SUITE, REFUSED_SUITES, tlsHandshake } from "../support/probes.js"
import { makeTestPki, removePki, sqliteLayer, TestRegistrar, testRegistrarLayer } from "./harness.js"

const pki = makeTestPki()
afterAll(() => removePki(pki))
const MAX = 64 * 1024
const db = sqliteLayer(join(mkdtempSync(join(tmpdir(), "attest-reg-probes-")), "registrar.sqlite"))
const env = Layer.mergeAll(testRegistrarLayer({ pki, ekTrustStore: emptyTrustStore(), maxBodyBytes: MAX }, db), db)

describe("registrar under the issue 8 probes", () => {
  layer(env, { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect("refuses TLS 1.2 suites without forward secrecy or AEAD on the HTTPS listener and accepts ECDHE-GCM and TLS 1.3", () =>
      Effect.gen(function*() {
        const { httpsUrl } = yield* TestRegistrar
        for (const suite of REFUSED_SUITES) {
          const h = yield* Effect.promise(() => tlsHandshake(httpsUrl, { ciphers: suite, tls12Only: true }))
          expect(h, suite).toMatchObject({ ok: false })
        }
        expect(yield* Effect.promise(() => tlsHandshake(httpsUrl, { ciphers: ALLOWED_TLS12_SUITE, tls12Only: true }))).toEqual({
          ok: true,
          protocol: "TLSv1.2",
          cipher: "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"
        })
        expect(yield* Effect.promise(() => tlsHandshake(httpsUrl, {}))).toMatchObject({ ok: true, protocol: "TLSv1.3" })
      }))
  })
})
