/**
 * The dashboard's local web server: plain HTTP on a loopback address only (127.0.0.1 unless another
 * loopback address is given; any other host is refused at start, since this server reads with the
 * tenant's admin credentials), default port 8443, else the next free one up to 8463; an explicit
 * port is used as given, 0 = any. Read-only: it serves the page's assets, the JSON views (views.ts)
 * and `/api/events`, a Server-Sent Events stream that sends the snapshot version after every sample
 * (at most MAX_EVENT_STREAMS at once: another gets 503 and the page polls instead; a client that
 * stops reading is dropped). Requests whose Host is not this loopback address or `localhost` (DNS
 * rebinding: a web page that gets a browser to send requests here) are refused with 403. Slow
 * clients are cut off as on every attest listener (src/http/timeouts.ts).
 */
import { Context, Data, Effect, Layer } from "effect"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { formatAddress } from "../http/listen.js"
import { isLoopbackHost } from "../http/loopback.js"
import { DEFAULT_LISTENER_TIMEOUTS, nodeServerTimeouts } from "../http/timeouts.js"
import { type Asset, loadAssets } from "./assets.js"
import { Sampler, type SamplerShape } from "./Sampler.js"
import { agentView, overviewView, policiesView, registrarView } from "./views.js"
import { requestTargetUrl } from "../http/requestTarget.js"

export const DEFAULT_DASHBOARD_PORT = 8443
const PORT_SEARCH = 20
/** Live-event streams served at once: a few browser tabs each; more is someone holding connections. */
export const MAX_EVENT_STREAMS = 32
/** Bytes queued for a live-event client that does not read; past this it is dropped. */
const MAX_EVENT_BACKLOG = 64 * 1024

export class DashboardListenError extends Data.TaggedError("DashboardListenError")<{ readonly message: string }> {}

export interface DashboardServerOptions {
  /** undefined: 8443 or the next free port; a number: exactly that port (0 = any free port). */
  readonly port?: number
  /** A loopback address (default 127.0.0.1); any other is refused at start. */
  readonly host?: string
}

export class DashboardUrl extends Context.Tag("attest/dashboard/DashboardUrl")<DashboardUrl, string>() {}

const json = (res: http.ServerResponse, status: number, body: unknown) => {
  const text = JSON.stringify(body)
  res.writeHead(status, { "content-type": "application/json; charset=utf-8", "cache-control": "no-store", "content-length": Buffer.byteLength(text) })
  res.end(text)
}

const SECURITY_HEADERS = {
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "content-security-policy": "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'"
}

/** The text of a percent-encoded path segment, undefined when it is not valid (`%zz`). */
const percentDecoded = (segment: string): string | undefined => {
  try {
    return decodeURIComponent(segment)
  } catch {
    return undefined
  }
}

const handler = (sampler: SamplerShape, assets: ReadonlyMap<string, Asset>, allowedHosts: () => ReadonlySet<string>, now: () => number) => {
  const streams = new Set<http.ServerResponse>()
  return (req: http.IncomingMessage, res: http.ServerResponse) => {
    try {
      if (!allowedHosts().has((req.headers.host ?? "").toLowerCase())) return json(res, 403, { error: "this dashboard answers on its loopback address only" })
      if (req.method !== "GET" && req.method !== "HEAD") {
        res.setHeader("allow", "GET, HEAD")
        return json(res, 405, { error: `${req.method} is not served: the dashboard is read-only` })
      }
      const url = requestTargetUrl(req.url ?? "/")
      if (url === undefined) return json(res, 400, { error: `the request target ${JSON.stringify(req.url)} is not a path` })
      const path = url.pathname
      if (path === "/api/events") return events(sampler, streams, res)
      if (path.startsWith("/api/")) {
        const s = sampler.snapshot()
        const h = sampler.history
        if (path === "/api/overview") return json(res, 200, overviewView(s, h, now()))
        if (path === "/api/policies") return json(res, 200, policiesView(s))
        if (path === "/api/registrar") return json(res, 200, registrarView(s))
        const m = /^\/api\/agents\/([^/]+)$/.exec(path)
        if (m !== null) {
          const id = percentDecoded(m[1]!)
          if (id === undefined) return json(res, 400, { error: `agent id ${m[1]!} is not valid percent-encoding` })
          const view = agentView(s, h, id, now())
          return view === null ? json(res, 404, { error: `agent ${id} is known to neither the verifier nor the registrar`, services: { verifier: s.verifier, registrar: s.registrar } }) : json(res, 200, view)
        }
        return json(res, 404, { error: `no such API path: ${path}` })
      }
      const name = path === "/" || path === "/index.html" ? "index.html" : path.startsWith("/assets/") ? path.slice("/assets/".length) : ""
      const asset = assets.get(name)
      if (asset === undefined) return json(res, 404, { error: `not found: ${path}` })
      res.writeHead(200, { "content-type": asset.contentType, "content-length": asset.body.length, "cache-control": "no-cache", ...SECURITY_HEADERS })
      res.end(req.method === "HEAD" ? undefined : asset.body)
    } catch (e) {
      // a view that throws answers 500 for this request; the server keeps serving
      if (!res.headersSent) json(res, 500, { error: `dashboard: ${e instanceof Error ? e.message : String(e)}` })
      else res.end()
    }
  }
}

/**
 * Server-Sent Events: `version` after every sample, a comment every 15 s to keep proxies open. At
 * most MAX_EVENT_STREAMS at once (`open` holds them); a client that lets MAX_EVENT_BACKLOG bytes
 * queue up is not reading and is dropped.
 */
const events = (sampler: SamplerShape, open: Set<http.ServerResponse>, res: http.ServerResponse) => {
  if (open.size >= MAX_EVENT_STREAMS) {
    res.setHeader("retry-after", "30")
    return json(res, 503, {
      error: `too many live-event connections: ${MAX_EVENT_STREAMS} are open, the most this dashboard serves; close another dashboard tab (this page polls instead)`
    })
  }
  open.add(res)
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-store", connection: "keep-alive" })
  const write = (text: string) => {
    if (res.writableLength > MAX_EVENT_BACKLOG) res.destroy()
    else res.write(text)
  }
  const send = (version: number) => write(`event: version\ndata: ${version}\n\n`)
  send(sampler.snapshot().version)
  const unsubscribe = sampler.subscribe(send)
  const keepAlive = setInterval(() => write(": keep-alive\n\n"), 15_000)
  const close = () => {
    open.delete(res)
    clearInterval(keepAlive)
    unsubscribe()
  }
  res.on("close", close)
  res.on("error", close)
}

const listenOn = (server: http.Server, host: string, port: number) =>
  Effect.async<number, NodeJS.ErrnoException>((resume) => {
    const onError = (e: NodeJS.ErrnoException) => {
      server.off("listening", onListening)
      resume(Effect.fail(e))
    }
    const onListening = () => {
      server.off("error", onError)
      resume(Effect.succeed((server.address() as AddressInfo).port))
    }
    server.once("error", onError)
    server.once("listening", onListening)
    server.listen(port, host)
  })

/** Binds the port asked, or 8443 and the next ones until one is free. */
const bind = (server: http.Server, host: string, port: number | undefined) =>
  Effect.gen(function*() {
    const tries = port === undefined ? Array.from({ length: PORT_SEARCH }, (_, i) => DEFAULT_DASHBOARD_PORT + i) : [port]
    for (const p of tries) {
      const r = yield* Effect.either(listenOn(server, host, p))
      if (r._tag === "Right") return r.right
      if (r.left.code !== "EADDRINUSE" || port !== undefined) {
        return yield* new DashboardListenError({ message: `cannot listen on ${host}:${p}: ${r.left.code ?? ""} ${r.left.message}`.trim() })
      }
    }
    return yield* new DashboardListenError({
      message: `ports ${DEFAULT_DASHBOARD_PORT}-${DEFAULT_DASHBOARD_PORT + PORT_SEARCH - 1} on ${host} are all in use; choose one with --port`
    })
  })

/** The web server over the Sampler in context; provides its URL. */
export const DashboardServerLive = (o: DashboardServerOptions = {}) =>
  Layer.scoped(
    DashboardUrl,
    Effect.gen(function*() {
      const host = o.host ?? "127.0.0.1"
      if (!isLoopbackHost(host)) {
        return yield* new DashboardListenError({
          message: `${host} is not a loopback address: the dashboard reads the verifier and the registrar with the admin certificate and listens on this machine only (127.0.0.1, ::1 or localhost)`
        })
      }
      const sampler = yield* Sampler
      const assets = yield* loadAssets
      let allowed: ReadonlySet<string> = new Set()
      const clock = yield* Effect.clock
      const server = http.createServer(
        nodeServerTimeouts(DEFAULT_LISTENER_TIMEOUTS),
        handler(sampler, assets, () => allowed, () => clock.unsafeCurrentTimeMillis())
      )
      const port = yield* bind(server, host, o.port)
      allowed = new Set([`${formatAddress(host, port)}`.toLowerCase(), `localhost:${port}`])
      yield* Effect.addFinalizer(() =>
        Effect.async<void>((resume) => {
          server.closeAllConnections()
          server.close(() => resume(Effect.void))
        })
      )
      return `http://${formatAddress(host, port)}/`
    })
  )

