/**
 * The dashboard's web server on its own (its sampler reading a verifier and a registrar that do not
 * answer: the server's own limits are under test): loopback only (a non-loopback host is refused at
 * start, saying why; the Host check refuses 0.0.0.0 and every name but its address and localhost),
 * at most MAX_EVENT_STREAMS live-event streams (another gets a 503 saying so; a closed one frees its
 * place), `/api/agents/%zz` answered 400, and slow clients cut off like on every listener
 * (issue 22 §6, §8, §9).
 */
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Context, Effect, Either, Layer } from "effect"
import * as http from "node:http"
import { SamplerLive } from "../../src/dashboard/Sampler.js"
import { DashboardServerLive, DashboardUrl, MAX_EVENT_STREAMS } from "../../src/dashboard/Server.js"
import { DEFAULT_LISTENER_TIMEOUTS } from "../../src/http/timeouts.js"
import { holdConnection } from "../support/slowClient.js"
import { makeTestPki, removePki } from "./harness.js"

const pki = makeTestPki()
afterAll(() => removePki(pki))

/** Upstreams on a port nothing listens on: the sampler says so, the server serves regardless. */
const sampler = SamplerLive({ verifierUrl: "https://127.0.0.1:9", registrarUrl: "https://127.0.0.1:9", tls: pki.clients.admin, intervalMs: 60_000 })

const dashboard = (host?: string) =>
  Layer.build(DashboardServerLive({ port: 0, ...(host === undefined ? {} : { host }) }).pipe(Layer.provide(sampler))).pipe(
    Effect.map((ctx) => Context.get(ctx, DashboardUrl))
  )

interface Answer {
  readonly status: number
  readonly body: string
  readonly response: http.IncomingMessage
  readonly request: http.ClientRequest
}

/** A GET with the given Host; the body is read only when the answer is not a stream. */
const get = (url: string, path: string, host?: string) =>
  Effect.async<Answer>((resume) => {
    const u = new URL(url)
    const request = http.get({ host: u.hostname, port: u.port, path, agent: false, headers: { host: host ?? u.host } }, (response) => {
      if (response.headers["content-type"] === "text/event-stream") return resume(Effect.succeed({ status: response.statusCode ?? 0, body: "", response, request }))
      let body = ""
      response.on("data", (d: Buffer) => (body += d.toString()))
      response.on("end", () => resume(Effect.succeed({ status: response.statusCode ?? 0, body, response, request })))
    })
    request.on("error", (e) => resume(Effect.die(e)))
  })

describe("dashboard web server", () => {
  it.scopedLive("answers an agent id that is not valid percent-encoding with 400, not 500", () =>
    Effect.gen(function*() {
      const url = yield* dashboard()
      const r = yield* get(url, "/api/agents/%zz")
      expect([r.status, JSON.parse(r.body)]).toEqual([400, { error: "agent id %zz is not valid percent-encoding" }])
      expect((yield* get(url, "/api/overview")).status).toBe(200)
    }), 60_000)

  // found by the dashboard-routes fuzzer: "//" was a 500 and "//host/api/…" was read as host and path
  it.scopedLive("reads a request target that starts with // as a path: not a 500, and no other host's path", () =>
    Effect.gen(function*() {
      const url = yield* dashboard()
      const root = yield* get(url, "//")
      expect([root.status, JSON.parse(root.body)]).toEqual([404, { error: "not found: //" }])
      const other = yield* get(url, "//evil.example/api/overview")
      expect([other.status, JSON.parse(other.body)]).toEqual([404, { error: "not found: //evil.example/api/overview" }])
    }), 60_000)

  it.scopedLive(`serves at most ${MAX_EVENT_STREAMS} live-event streams; another is refused with 503 saying so; a closed one frees its place`, () =>
    Effect.gen(function*() {
      const url = yield* dashboard()
      const streams: Array<Answer> = []
      yield* Effect.addFinalizer(() => Effect.sync(() => streams.forEach((s) => s.request.destroy())))
      for (let i = 0; i < MAX_EVENT_STREAMS; i++) streams.push(yield* get(url, "/api/events"))
      expect(streams.every((s) => s.status === 200)).toBe(true)
      const refused = yield* get(url, "/api/events")
      expect([refused.status, refused.response.headers["retry-after"], JSON.parse(refused.body)]).toEqual([503, "30", {
        error: `too many live-event connections: ${MAX_EVENT_STREAMS} are open, the most this dashboard serves; close another dashboard tab (this page polls instead)`
      }])
      // the JSON views keep answering meanwhile
      expect((yield* get(url, "/api/overview")).status).toBe(200)
      streams.shift()!.request.destroy()
      let again = yield* get(url, "/api/events")
      for (let i = 0; i < 50 && again.status !== 200; i++) {
        yield* Effect.sleep("100 millis")
        again = yield* get(url, "/api/events")
      }
      streams.push(again)
      expect(again.status).toBe(200)
    }), 60_000)

  it.scopedLive("answers only Host values naming its loopback address or localhost: not 0.0.0.0, not another name", () =>
    Effect.gen(function*() {
      const url = yield* dashboard()
      const port = new URL(url).port
      const statuses: Record<string, number> = {}
      for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `0.0.0.0:${port}`, `attacker.example:${port}`, `10.0.0.1:${port}`, `[::]:${port}`, "127.0.0.1"]) {
        statuses[host] = (yield* get(url, "/api/overview", host)).status
      }
      expect(statuses).toEqual({
        [`127.0.0.1:${port}`]: 200,
        [`localhost:${port}`]: 200,
        [`0.0.0.0:${port}`]: 403,
        [`attacker.example:${port}`]: 403,
        [`10.0.0.1:${port}`]: 403,
        [`[::]:${port}`]: 403,
        "127.0.0.1": 403
      })
    }), 60_000)

  it.scopedLive("refuses to start on an address that is not loopback, saying why", () =>
    Effect.gen(function*() {
      const outcomes: Array<string> = []
      for (const host of ["0.0.0.0", "::", "192.0.2.1", "example.com"]) {
        const r = yield* Effect.either(Effect.scoped(dashboard(host)))
        outcomes.push(Either.isLeft(r) ? r.left.message : `started on ${r.right}`)
      }
      expect(outcomes).toEqual(["0.0.0.0", "::", "192.0.2.1", "example.com"].map((host) =>
        `${host} is not a loopback address: the dashboard reads the verifier and the registrar with the admin certificate and listens on this machine only (127.0.0.1, ::1 or localhost)`
      ))
      // another loopback address is taken as given
      expect(yield* dashboard("127.0.0.2")).toMatch(/^http:\/\/127\.0\.0\.2:\d+\/$/)
    }), 60_000)

  it.scopedLive("closes a slow-header client and a silent one within the bound", () =>
    Effect.gen(function*() {
      const url = yield* dashboard()
      const held = yield* Effect.all([
        holdConnection({ url, mode: "drip", giveUpMs: 30_000 }),
        holdConnection({ url, mode: "drip", giveUpMs: 30_000 }),
        holdConnection({ url, mode: "silent", giveUpMs: 30_000 })
      ], { concurrency: "unbounded" })
      console.log(`dashboard: closed after ${held.map((h) => h.closedAfterMs === undefined ? "still open" : `${(h.closedAfterMs / 1000).toFixed(1)} s`).join(", ")} (two slow-header, one silent)`)
      expect(held.map((h) => h.closedAfterMs !== undefined && h.closedAfterMs >= DEFAULT_LISTENER_TIMEOUTS.headersMs - 1000)).toEqual([true, true, true])
    }), 60_000)
})
