/**
 * The probes that found issue 8's holes, re-run against both registrar listeners as cheap tests:
 * refused TLS suites, deeply nested JSON, oversized and chunked bodies, and request lines node's
 * parser refuses. Every answer is the envelope.
 */
import { afterAll, describe, expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as crypto from "node:crypto"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { emptyTrustStore } from "../../src/pki/chain.js"
import { ALLOWED_TLS12_SUITE, deepJson, rawExchange, REFUSED_SUITES, tlsHandshake } from "../support/probes.js"
import { countRows, makeTestPki, removePki, sqliteLayer, TestRegistrar, testRegistrarLayer } from "./harness.js"

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

    const listeners = Effect.map(TestRegistrar, (r) => [["http", r.httpUrl], ["https", r.httpsUrl]] as const)
    const client = { cert: pki.clients.admin.cert!, key: pki.clients.admin.key! }
    const envelope = (body: string) => JSON.parse(body) as unknown
    const request = (method: string, path: string, headers: Record<string, string>, body = "") =>
      `${method} ${path} HTTP/1.1\r\nHost: x\r\n${Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join("")}\r\n${body}`

    it.effect("refuses JSON nested 5,000 levels deep with a 400 envelope on every body route of both listeners", () =>
      Effect.gen(function*() {
        const deep = deepJson(5000)
        expect(deep.length).toBeLessThan(11_000)
        for (const [name, url] of yield* listeners) {
          for (const [method, path] of [["POST", "/v2.6/agents/deep-1"], ["POST", "/v2.6/agents"], ["PUT", "/v2.6/agents/deep-1/activate"], ["POST", "/v2.6/agents/deep-1/activate"], ["PUT", "/v2.6/agents/deep-1"]]) {
            const r = yield* Effect.promise(() =>
              rawExchange(url, [request(method!, path!, { "content-type": "application/json", "content-length": String(deep.length) }, deep)], { client })
            )
            expect([name, method, path, r.status, envelope(r.body)]).toEqual([name, method, path, 400, {
              code: 400,
              status: "Malformed JSON body: nested deeper than 64 levels",
              results: {}
            }])
          }
        }
        expect(yield* countRows).toBe(0)
      }))

    it.effect("answers an oversized body with a 413 envelope, declared or chunked, on both listeners", () =>
      Effect.gen(function*() {
        const big = JSON.stringify({ aik_tpm: crypto.randomBytes(MAX).toString("base64") })
        const expected = { code: 413, status: `Request body exceeds the limit of ${MAX} bytes`, results: {} }
        for (const [name, url] of yield* listeners) {
          const declared = yield* Effect.promise(() =>
            rawExchange(url, [request("POST", "/v2.6/agents/big-1", { "content-type": "application/json", "content-length": String(big.length) }, big)], { client })
          )
          expect([name, declared.status, envelope(declared.body)]).toEqual([name, 413, expected])
          // chunked, in 8 KiB pieces, the whole body sent after the limit is passed
          const pieces: Array<string> = [request("POST", "/v2.6/agents/big-1", { "content-type": "application/json", "transfer-encoding": "chunked" })]
          for (let i = 0; i < big.length; i += 8192) {
            const part = big.slice(i, i + 8192)
            pieces.push(`${part.length.toString(16)}\r\n${part}\r\n`)
          }
          pieces.push("0\r\n\r\n")
          const chunked = yield* Effect.promise(() => rawExchange(url, pieces, { client }))
          expect([name, chunked.status, envelope(chunked.body), chunked.error]).toEqual([name, 413, expected, undefined])
        }
        expect(yield* countRows).toBe(0)
      }))

    it.effect("answers a request line node's parser refuses (raw non-ASCII bytes in the path) with a 400 envelope on both listeners", () =>
      Effect.gen(function*() {
        for (const [name, url] of yield* listeners) {
          const line = Buffer.concat([Buffer.from("GET /v2.6/agents/"), Buffer.from([0xc3, 0xa9, 0xff]), Buffer.from(" HTTP/1.1\r\nHost: x\r\n\r\n")])
          const r = yield* Effect.promise(() => rawExchange(url, [line], { client }))
          expect([name, r.status, r.headers["content-type"]]).toEqual([name, 400, "application/json"])
          expect(envelope(r.body)).toEqual({
            code: 400,
            status: expect.stringMatching(/^Bad Request: the request line or headers cannot be parsed \(HPE_/),
            results: {}
          })
        }
      }))
  })
})
