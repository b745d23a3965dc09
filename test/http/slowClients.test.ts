/**
 * Slow clients are cut off on every server listener (issue 22 §6: 300 connections sending their
 * headers one byte at a time were all still open after 78 s). The registrar (its HTTP and HTTPS
 * listeners and its metrics listener) and the verifier (HTTPS and metrics) run from their config
 * sections; with the defaults a client that has not sent its headers within 10 s, or opened TLS
 * and sent nothing, is closed (node's own defaults let it live 60-90 s, TLS 120 s), and the
 * descriptors come back. With the options set, the bounds follow them: headers, the whole request
 * (a body sent one byte at a time), idle keep-alive. The agent's and the dashboard's listeners have
 * their own tests (test/agent/slowClients.test.ts, test/dashboard/server.test.ts).
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Either, Layer } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { BoundListeners } from "../../src/http/HttpServers.js"
import { MetricsEndpoint } from "../../src/http/MetricsListener.js"
import { sectionDefaults } from "../../src/config/load.js"
import { type RegistrarOptions, registrarSection } from "../../src/config/sections.js"
import { DEFAULT_LISTENER_TIMEOUTS } from "../../src/http/timeouts.js"
import { RegistrarFromConfig } from "../../src/registrar/fromConfig.js"
import { verifierOptions, VerifierFromConfig } from "../../src/verifier/fromConfig.js"
import { type Held, holdConnection, type HoldOptions, openDescriptors } from "../support/slowClient.js"
import { freePort } from "../support/swtpm.js"

/** Generous on a loaded machine: before the fix none of these closed before 60 s. */
const CLOSED_WITHIN_MS = 30_000

const workDir = Effect.acquireRelease(
  Effect.sync(() => mkdtempSync(join(tmpdir(), "attest-slow-clients-"))),
  (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
)

const registrar = (dir: string, overrides: Partial<RegistrarOptions> = {}) =>
  Effect.gen(function*() {
    const metricsPort = yield* Effect.promise(freePort)
    const section = sectionDefaults(registrarSection, {
      ip: "127.0.0.1",
      port: 0,
      tls_port: 0,
      tls_dir: "generate",
      ca_dir: join(dir, "cv_ca"),
      data_dir: join(dir, "registrar"),
      ek_ca_dir: join(dir, "tpm_cert_store"),
      metrics_ip: "127.0.0.1",
      metrics_port: metricsPort,
      ...overrides
    })
    const ctx = yield* Layer.build(RegistrarFromConfig(section))
    const bound = Context.get(ctx, BoundListeners)
    const metrics = Context.get(ctx, MetricsEndpoint)
    return {
      "registrar-http": bound.get("registrar-http")!.url,
      "registrar-https": bound.get("registrar-https")!.url,
      "registrar-metrics": metrics._tag === "Some" ? metrics.value : "none"
    }
  })

const verifier = (dir: string) =>
  Effect.gen(function*() {
    const metricsPort = yield* Effect.promise(freePort)
    const section = verifierOptions({
      port: 0,
      tls_dir: "generate",
      ca_dir: join(dir, "verifier_ca"),
      data_dir: join(dir, "verifier"),
      metrics_port: metricsPort
    })
    const ctx = yield* Layer.build(VerifierFromConfig(section))
    const metrics = Context.get(ctx, MetricsEndpoint)
    return {
      verifier: Context.get(ctx, BoundListeners).get("verifier")!.url,
      "verifier-metrics": metrics._tag === "Some" ? metrics.value : "none"
    }
  })

interface Outcome extends Held {
  readonly listener: string
  readonly mode: HoldOptions["mode"]
}

const hold = (listener: string, url: string, mode: HoldOptions["mode"], giveUpMs = CLOSED_WITHIN_MS): Effect.Effect<Outcome> =>
  Effect.map(holdConnection({ url, mode, giveUpMs }), (held) => ({ ...held, listener, mode }))

const seconds = (ms: number | undefined) => (ms === undefined ? "still open" : `${(ms / 1000).toFixed(1)} s`)

describe("every listener cuts off clients that do not send their request", () => {
  it.scopedLive("registrar (HTTP, HTTPS, metrics) and verifier (HTTPS, metrics) close slow-header and silent clients within the bound, and release their descriptors", () =>
    Effect.gen(function*() {
      const dir = yield* workDir
      const listeners: Record<string, string> = { ...(yield* registrar(dir)), ...(yield* verifier(dir)) }
      expect(Object.values(listeners).includes("none")).toBe(false)
      const before = openDescriptors()
      const clients = Object.entries(listeners).flatMap(([listener, url]) => [
        hold(listener, url, "drip"),
        hold(listener, url, "drip"),
        hold(listener, url, "drip"),
        hold(listener, url, "silent")
      ])
      const fiber = yield* Effect.fork(Effect.all(clients, { concurrency: "unbounded" }))
      yield* Effect.sleep("4 seconds")
      const during = openDescriptors()
      const outcomes = yield* fiber.await.pipe(Effect.flatMap((exit) => exit))
      yield* Effect.sleep("1 second")
      const after = openDescriptors()
      for (const listener of Object.keys(listeners)) {
        const mine = outcomes.filter((o) => o.listener === listener)
        console.log(`${listener}: slow-header clients closed after ${mine.filter((o) => o.mode === "drip").map((o) => seconds(o.closedAfterMs)).join(", ")}; silent after ${seconds(mine.find((o) => o.mode === "silent")!.closedAfterMs)}`)
      }
      console.log(`descriptors: ${before} before, ${during} with ${clients.length} clients held, ${after} after`)
      // every client closed by the server within the bound, none before the headers' bound
      expect(outcomes.filter((o) => o.closedAfterMs === undefined).map((o) => `${o.listener} ${o.mode}`)).toEqual([])
      expect(outcomes.filter((o) => o.closedAfterMs! < DEFAULT_LISTENER_TIMEOUTS.headersMs - 1000).map((o) => `${o.listener} ${o.mode} ${seconds(o.closedAfterMs)}`)).toEqual([])
      // a client that got as far as HTTP gets the 408 envelope; a TLS client that never shook hands, nothing
      for (const o of outcomes) {
        const tlsSilent = o.mode === "silent" && listeners[o.listener]!.startsWith("https:")
        expect([o.listener, o.mode, tlsSilent ? o.received : o.received.split("\r\n")[0]]).toEqual([o.listener, o.mode, tlsSilent ? "" : "HTTP/1.1 408 Request Timeout"])
      }
      // the connections were held meanwhile (both ends are in this process), and are released
      expect(during - before).toBeGreaterThanOrEqual(clients.length)
      expect(after - before).toBeLessThanOrEqual(2)
    }), 120_000)

  it.scopedLive("client_header_timeout, client_request_timeout and keep_alive_timeout set the bounds", () =>
    Effect.gen(function*() {
      const dir = yield* workDir
      const listeners = yield* registrar(dir, { client_header_timeout: 1, client_request_timeout: 4, keep_alive_timeout: 1 })
      const http = listeners["registrar-http"]
      const [headers, body, idle, tlsSilent] = yield* Effect.all([
        hold("registrar-http", http, "drip", 20_000),
        hold("registrar-http", http, "dripBody", 20_000),
        hold("registrar-http", http, "idle", 20_000),
        hold("registrar-https", listeners["registrar-https"], "silent", 20_000)
      ], { concurrency: "unbounded" })
      console.log(`configured 1 s / 4 s / 1 s: headers closed after ${seconds(headers!.closedAfterMs)}, body after ${seconds(body!.closedAfterMs)}, idle keep-alive after ${seconds(idle!.closedAfterMs)}, TLS without handshake after ${seconds(tlsSilent!.closedAfterMs)}`)
      const within = (o: Held, from: number, to: number) => o.closedAfterMs !== undefined && o.closedAfterMs >= from && o.closedAfterMs <= to
      expect({
        headers: within(headers!, 500, 10_000),
        body: within(body!, 3_500, 15_000),
        idle: within(idle!, 500, 10_000),
        tlsSilent: within(tlsSilent!, 500, 10_000)
      }).toEqual({ headers: true, body: true, idle: true, tlsSilent: true })
      // the body's bound answers 408 after the client's headers were taken; the idle one had its answer
      expect(body!.received.split("\r\n")[0]).toBe("HTTP/1.1 408 Request Timeout")
      expect(idle!.received.split("\r\n")[0]).toBe("HTTP/1.1 200 OK")
    }), 120_000)

  it.scopedLive("refuses timeouts it cannot honour at start, naming the option", () =>
    Effect.gen(function*() {
      const dir = yield* workDir
      const zero = yield* Effect.either(registrar(dir, { client_header_timeout: 0 }))
      const inverted = yield* Effect.either(registrar(dir, { client_header_timeout: 30, client_request_timeout: 20 }))
      expect([Either.isLeft(zero) && zero.left.message, Either.isLeft(inverted) && inverted.left.message]).toEqual([
        "client_header_timeout = 0: must be more than 0 seconds (a listener without this bound can be held open by a slow client)",
        "client_header_timeout = 30 is longer than client_request_timeout = 20: the headers are part of the request"
      ])
    }), 60_000)
})
