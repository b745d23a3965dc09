/**
 * One platform, two wire families: `/v2.x` answers with the `{code,status,results}` envelope and
 * `/v3[.m]` with JSON:API documents (`application/vnd.api+json`), also for the platform's own
 * refusals (unknown route, oversized body, decode failures, defects). v3 routes are routed under
 * `/v3` and cannot be reached through a v2 prefix.
 */
import { HttpApi, HttpApiBuilder, HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { describe, expect, layer } from "@effect/vitest"
import { Context, Effect, Layer, Schema } from "effect"
import { Envelope } from "../../schemas/Envelope.js"
import { BoundListeners, HttpServers } from "../../src/http/HttpServers.js"
import { rawRequest } from "../../src/http/client.js"
import { JSON_API_MEDIA_TYPE, jsonApiResponse } from "../../src/http/jsonapi.js"
import { VERIFIER_VERSIONS } from "../../src/http/versions.js"

class V2 extends HttpApiGroup.make("v2").add(
  HttpApiEndpoint.get("thing", "/things/:id").setPath(Schema.Struct({ id: Schema.String })).addSuccess(Envelope(Schema.Struct({ id: Schema.String })))
) {}
class V3 extends HttpApiGroup.make("v3")
  .add(HttpApiEndpoint.get("thing", "/things/:id").setPath(Schema.Struct({ id: Schema.NumberFromString })))
  .add(HttpApiEndpoint.post("upload", "/uploads").setPayload(Schema.Union(Schema.Struct({ name: Schema.String }), Schema.Uint8ArrayFromSelf, Schema.String)))
  .add(HttpApiEndpoint.get("boom", "/boom"))
  .prefix("/v3")
{}
class Api extends HttpApi.make("families").add(V2).add(V3) {}

const handlers = Layer.mergeAll(
  HttpApiBuilder.group(Api, "v2", (h) => h.handle("thing", ({ path }) => Effect.succeed({ id: path.id }))),
  HttpApiBuilder.group(Api, "v3", (h) =>
    h
      .handleRaw("thing", ({ path }) => Effect.succeed(jsonApiResponse(200, { data: { type: "thing", id: String(path.id), attributes: {} } })))
      .handleRaw("boom", () => Effect.die(new Error("kaboom")))
      .handle("upload", ({ payload }) =>
        Effect.succeed(jsonApiResponse(201, {
          data: { type: "upload", attributes: { read: payload instanceof Uint8Array ? `bytes:${payload.length}` : typeof payload === "string" ? `text:${payload}` : `json:${payload.name}` } }
        }))))
)

class Url extends Context.Tag("test/Url")<Url, string>() {}
const env = Layer.effect(Url, Effect.map(BoundListeners, (b) => b.get("plain")!.url)).pipe(
  Layer.provide(HttpServers.layerWith({
    versions: VERIFIER_VERSIONS,
    unversioned: [],
    maxBodyBytes: 2048,
    listeners: [{ name: "plain", host: "127.0.0.1", port: 0 }]
  })),
  Layer.provide(HttpApiBuilder.api(Api).pipe(Layer.provide(handlers)))
)

const req = (method: string, path: string, body?: string) =>
  Effect.flatMap(Url, (baseUrl) => rawRequest({ method, baseUrl, path, ...(body === undefined ? {} : { body, headers: { "content-type": JSON_API_MEDIA_TYPE } }) })).pipe(
    Effect.map((r) => ({ status: r.status, contentType: r.contentType.split(";")[0], json: JSON.parse(r.body) as unknown })),
    Effect.orDie
  )

describe("platform: version families", () => {
  layer(env)((it) => {
    it.effect("v2 answers with the envelope, v3 with JSON:API on the same listener", () =>
      Effect.gen(function*() {
        expect(yield* req("GET", "/v2.6/things/a")).toEqual({ status: 200, contentType: "application/json", json: { code: 200, status: "Success", results: { id: "a" } } })
        expect(yield* req("GET", "/v3.0/things/7")).toEqual({ status: 200, contentType: JSON_API_MEDIA_TYPE, json: { data: { type: "thing", id: "7", attributes: {} } } })
        expect((yield* req("GET", "/v3/things/7")).status).toEqual(200)
      }))

    it.effect("the platform's refusals under /v3 are JSON:API error documents", () =>
      Effect.gen(function*() {
        const missing = yield* req("GET", "/v3.0/nothing")
        expect(missing).toEqual({
          status: 404,
          contentType: JSON_API_MEDIA_TYPE,
          json: { errors: [{ status: "404", title: "Not Found", detail: "Not Found: no route for GET /v3.0/nothing" }], links: { self: "/v3.0/nothing" }, jsonapi: { version: "1.1" } }
        })
        const decode = yield* req("GET", "/v3.0/things/notanumber")
        expect(decode.status).toEqual(400)
        expect(decode.contentType).toEqual(JSON_API_MEDIA_TYPE)
        expect((decode.json as { errors: Array<{ detail: string }> }).errors[0]!.detail).toMatch(/^Invalid request: id: /)
        const big = yield* req("POST", "/v3.0/things", "x".repeat(4096))
        expect(big).toMatchObject({ status: 413, contentType: JSON_API_MEDIA_TYPE, json: { errors: [{ status: "413", title: "Payload Too Large" }] } })
        const boom = yield* req("GET", "/v3.0/boom")
        expect(boom).toMatchObject({ status: 500, contentType: JSON_API_MEDIA_TYPE, json: { errors: [{ status: "500", detail: "Internal Server Error" }] } })
      }))

    it.effect("a v3 route whose payload the API decodes answers every media type (the body is read once, never twice)", () =>
      Effect.gen(function*() {
        const baseUrl = yield* Url
        const send = (type: string) =>
          rawRequest({ method: "POST", baseUrl, path: "/v3.0/uploads", body: "{\"name\":\"n\"}", headers: { "content-type": type } }).pipe(
            Effect.timeoutFail({ duration: "20 seconds", onTimeout: () => new Error(`${type}: not answered within 20 s`) }),
            Effect.map((r) => [r.status, (JSON.parse(r.body) as { data?: { attributes: { read: string } } }).data?.attributes.read]),
            Effect.orDie
          )
        expect(yield* send("application/json")).toEqual([201, "json:n"])
        expect(yield* send("text/plain")).toEqual([201, "text:{\"name\":\"n\"}"])
        // read as bytes by the decoder: before the fix it waited for a stream already consumed
        expect(yield* send("application/octet-stream")).toEqual([201, "bytes:12"])
        expect(yield* send(JSON_API_MEDIA_TYPE)).toEqual([201, "bytes:12"])
        const multipart = yield* send("multipart/form-data; boundary=b")
        expect(multipart[0]).toBeGreaterThanOrEqual(400)
      }))

    it.effect("a v2 prefix does not reach v3 routes", () =>
      Effect.gen(function*() {
        expect(yield* req("GET", "/v2.6/v3/things/7")).toEqual({
          status: 404,
          contentType: "application/json",
          json: { code: 404, status: "Not Found: no route for GET /v2.6/v3/things/7", results: {} }
        })
      }))
  })
})
