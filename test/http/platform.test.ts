/**
 * The server platform on its own, with a tiny API: every answer is the envelope (unknown routes and
 * versions, malformed, invalid and oversized bodies, defects), `/v2` is the newest 2.x, and handlers
 * see the version they were called with.
 */
import { HttpApi, HttpApiBuilder, HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { describe, expect, layer } from "@effect/vitest"
import { Context, Effect, FiberRef, Layer, Schema } from "effect"
import * as http from "node:http"
import { Envelope, NotFound, NotFoundE } from "../../schemas/Envelope.js"
import { PortNumber } from "../../schemas/Common.js"
import { rawRequest } from "../../src/http/client.js"
import { BoundListeners, HttpServers } from "../../src/http/HttpServers.js"
import { currentApiVersion, formatVersion, V2_VERSIONS } from "../../src/http/versions.js"

class Things extends HttpApiGroup.make("things")
  .add(HttpApiEndpoint.get("version", "/version").addSuccess(Envelope(Schema.Struct({ v: Schema.String }))))
  .add(
    HttpApiEndpoint.get("get", "/things/:thing_id")
      .setPath(Schema.Struct({ thing_id: Schema.String }))
      .addSuccess(Envelope(Schema.Struct({ thing_id: Schema.String, api: Schema.String })))
      .addError(NotFoundE)
  )
  .add(
    HttpApiEndpoint.post("add", "/things")
      .setPayload(Schema.Struct({ name: Schema.String, port: PortNumber }))
      .addSuccess(Envelope(Schema.Struct({}), 201, "Created"))
  )
  .add(HttpApiEndpoint.get("boom", "/boom").addSuccess(Envelope(Schema.Struct({}))))
{}
class TestApi extends HttpApi.make("test").add(Things) {}

const Handlers = HttpApiBuilder.group(TestApi, "things", (h) =>
  h
    .handle("version", () => Effect.succeed({ v: "x" }))
    .handle("get", ({ path }) =>
      path.thing_id === "missing"
        ? Effect.fail(new NotFound({ message: `thing ${path.thing_id} not found` }))
        : Effect.map(FiberRef.get(currentApiVersion), (v) => ({ thing_id: path.thing_id, api: formatVersion(v) })))
    .handle("add", () => Effect.succeed({}))
    .handle("boom", () => Effect.die(new Error("kaboom"))))

const LIMIT = 4096
class Url extends Context.Tag("test/Url")<Url, string>() {}
const env = Layer.effect(Url, Effect.map(BoundListeners, (b) => b.get("plain")!.url)).pipe(
  Layer.provide(HttpServers.layerWith({
    versions: V2_VERSIONS,
    unversioned: ["/version"],
    maxBodyBytes: LIMIT,
    listeners: [{ name: "plain", host: "127.0.0.1", port: 0 }]
  })),
  Layer.provide(HttpApiBuilder.api(TestApi).pipe(Layer.provide(Handlers)))
)

const req = (method: string, path: string, body?: string, contentType: string | undefined = "application/json") =>
  Effect.flatMap(Url, (baseUrl) =>
    rawRequest({ method, baseUrl, path, ...(body === undefined ? {} : { body, headers: contentType === undefined ? {} : { "content-type": contentType } }) })
  ).pipe(
    // bounded: a request the platform never answers fails here instead of hanging the suite
    Effect.timeoutFail({ duration: "20 seconds", onTimeout: () => new Error(`${method} ${path} (${contentType}) not answered within 20 s`) }),
    Effect.map((r) => ({ status: r.status, contentType: r.contentType, json: JSON.parse(r.body) as unknown })),
    Effect.orDie
  )

describe("server platform", () => {
  layer(env, { excludeTestServices: true })((it) => {
    it.effect("routes every 2.x prefix and tells the handler which version was called", () =>
      Effect.gen(function*() {
        for (const [prefix, api] of [["v2.0", "2.0"], ["v2.3", "2.3"], ["v2.6", "2.6"], ["v2", "2.6"]] as const) {
          const r = yield* req("GET", `/${prefix}/things/t1`)
          expect(r.json).toEqual({ code: 200, status: "Success", results: { thing_id: "t1", api } })
          expect(r.contentType).toMatch(/^application\/json/)
        }
        expect((yield* req("GET", "/v2.6/things/t1/")).status).toBe(200)
        expect((yield* req("GET", "/version")).json).toEqual({ code: 200, status: "Success", results: { v: "x" } })
      }))

    it.effect("answers unknown routes, versions and unprefixed paths with a 404 envelope", () =>
      Effect.gen(function*() {
        expect((yield* req("GET", "/v2.6/nope")).json).toEqual({ code: 404, status: "Not Found: no route for GET /v2.6/nope", results: {} })
        expect((yield* req("GET", "/v9.1/things/t1")).json).toEqual({
          code: 404,
          status: "API version 9.1 is not supported (supported: 2.0, 2.1, 2.2, 2.3, 2.4, 2.5, 2.6)",
          results: {}
        })
        expect((yield* req("GET", "/things/t1")).json).toEqual({ code: 404, status: "Not Found: no route for GET /things/t1", results: {} })
        expect((yield* req("DELETE", "/v2.6/things/t1")).status).toBe(404)
      }))

    it.effect("answers declared errors, bad bodies and defects with envelopes", () =>
      Effect.gen(function*() {
        expect((yield* req("GET", "/v2.6/things/missing")).json).toEqual({ code: 404, status: "thing missing not found", results: {} })
        expect((yield* req("POST", "/v2.6/things", "{\"name\":")).status).toBe(400)
        expect((yield* req("POST", "/v2.6/things", JSON.stringify({ name: "a", port: 0 }))).json).toEqual({
          code: 400,
          status: "Invalid request: port: must be a port number 1-65535",
          results: {}
        })
        expect((yield* req("POST", "/v2.6/things", JSON.stringify({ port: 80 }))).json).toEqual({
          code: 400,
          status: "Invalid request: name: is required",
          results: {}
        })
        expect((yield* req("POST", "/v2.6/things", JSON.stringify({ name: "a", port: 80 }))).json).toEqual({
          code: 201,
          status: "Created",
          results: {}
        })
        expect((yield* req("GET", "/v2.6/boom")).json).toEqual({ code: 500, status: "Internal Server Error", results: {} })
      }))

    it.effect("reads application/json, any application/…+json and a body without Content-Type as JSON", () =>
      Effect.gen(function*() {
        const body = JSON.stringify({ name: "a", port: 80 })
        const created = { code: 201, status: "Created", results: {} }
        for (const type of ["application/json", "application/json; charset=utf-8", "application/vnd.api+json", "Application/Problem+JSON", undefined]) {
          expect([type, (yield* req("POST", "/v2.6/things", body, type)).json]).toEqual([type, created])
        }
      }))

    it.effect("answers a media type it does not take with a 415 envelope naming it, whatever the decoder would have read", () =>
      Effect.gen(function*() {
        const body = JSON.stringify({ name: "a", port: 80 })
        for (const type of ["text/plain", "application/octet-stream", "multipart/form-data; boundary=b", "application/x-www-form-urlencoded", "image/png"]) {
          const media = type.split(";")[0]
          expect([type, yield* req("POST", "/v2.6/things", body, type)]).toEqual([type, {
            status: 415,
            contentType: "application/json",
            json: { code: 415, status: `Unsupported Media Type: the request body must be JSON (application/json), not ${media}`, results: {} }
          }])
        }
        // a body on GET is not a payload: ignored, whatever its type
        expect((yield* req("GET", "/v2.6/things/t1", "hello", "text/plain")).status).toBe(200)
      }))

    it.effect("refuses bodies over the limit, with or without a content-length", () =>
      Effect.gen(function*() {
        const big = JSON.stringify({ name: "x".repeat(LIMIT), port: 80 })
        expect((yield* req("POST", "/v2.6/things", big)).json).toEqual({
          code: 413,
          status: `Request body exceeds the limit of ${LIMIT} bytes`,
          results: {}
        })
        // chunked (no content-length): the limit applies while reading; the rest is drained so the
        // client, still sending, reads the 413 envelope; the handler never sees the body
        const url = new URL(yield* Url)
        const chunked = yield* Effect.async<{ status: number; body: string } | { error: string }>((resume) => {
          const r = http.request({ host: url.hostname, port: url.port, method: "POST", path: "/v2.6/things", headers: { "content-type": "application/json" } }, (res) => {
            let body = ""
            res.on("data", (c) => (body += c))
            res.on("end", () => resume(Effect.succeed({ status: res.statusCode ?? 0, body })))
          })
          r.on("error", (e) => resume(Effect.succeed({ error: e.message })))
          r.write(big.slice(0, 2000))
          r.end(big.slice(2000))
        })
        expect("body" in chunked ? JSON.parse(chunked.body) : chunked).toEqual({
          code: 413,
          status: `Request body exceeds the limit of ${LIMIT} bytes`,
          results: {}
        })
      }))
  })
})
