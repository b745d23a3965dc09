/**
 * GET /version answered before the platform and the router (src/http/fixedRoutes.ts), on a running
 * registrar: the same status, headers and bytes as the router's answer (GET /v2.6/version is the
 * router's), counted in the request metrics under the router's route, and every other request to
 * the same path (another method, a query, a body) still the router's.
 */
import { afterAll, describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { rawRequest } from "../../src/http/client.js"
import { scrapePrometheus } from "../../src/ops/prometheus.js"
import { trustStoreOf } from "../../src/pki/chain.js"
import { makeTestPki, removePki, sqliteLayer, TestRegistrar, testRegistrarLayer } from "../registrar/harness.js"
import { parseExposition, valueOf } from "../support/prometheus.js"

const pki = makeTestPki()
afterAll(() => removePki(pki))
const db = sqliteLayer(join(mkdtempSync(join(tmpdir(), "attest-fixed-routes-")), "registrar.sqlite"))

describe("fixed routes", () => {
  layer(testRegistrarLayer({ pki, ekTrustStore: trustStoreOf([], "none") }, db), { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect("GET /version: the router's answer, counted under its route; other requests to it go to the router", () =>
      Effect.gen(function*() {
        const reg = yield* TestRegistrar
        const get = (path: string, method = "GET", body?: string) =>
          Effect.orDie(rawRequest({ method, baseUrl: reg.httpUrl, path, ...(body === undefined ? {} : { body, headers: { "content-type": "application/json" } }) }))
        const counted = Effect.map(scrapePrometheus, (text) =>
          valueOf(parseExposition(text), "attest_http_requests_total", { listener: "registrar-http", method: "GET", route: "/version", status: "200" }) ?? 0)
        const before = yield* counted

        const routed = yield* get("/v2.6/version")
        const shape = (r: typeof routed) => ({ status: r.status, type: r.headers["content-type"], length: r.headers["content-length"], body: r.body })
        expect(routed.status).toBe(200)
        expect(JSON.parse(routed.body)).toEqual({ code: 200, status: "Success", results: { current_version: "2.6", supported_versions: ["2.0", "2.1", "2.2", "2.3", "2.4", "2.5", "2.6"] } })
        expect(shape(yield* get("/version"))).toEqual(shape(routed))
        expect(shape(yield* get("/version/"))).toEqual(shape(routed))
        // the router's: a query string, a body, another method
        expect(shape(yield* get("/version?x=1"))).toEqual(shape(routed))
        expect(shape(yield* get("/version", "GET", "{}"))).toEqual(shape(routed))
        const post = yield* get("/version", "POST", "{}")
        expect({ status: post.status, body: JSON.parse(post.body) }).toEqual({ status: 404, body: { code: 404, status: "Not Found: no route for POST /version", results: {} } })

        // three GETs answered by the router, two in front of it
        expect((yield* counted) - before).toEqual(5)
      }))
  })
})
