/**
 * `GET /metrics` (Prometheus text format 0.0.4, src/ops/prometheus.ts) on a plain-HTTP listener of
 * its own, apart from the API listeners: no TLS, no client certificates, no envelope, so a
 * Prometheus server scrapes it as it scrapes anything else. Slow clients are cut off as on every
 * listener (the ListenerTimeouts in context: src/http/timeouts.ts). It binds on `metrics_ip` (default
 * 127.0.0.1: only this host) and is off when `metrics_port` is 0. A server adds it with one layer:
 *
 *   RegistrarServerLive(options).pipe(Layer.merge(MetricsServer.fromSection(section, "registrar-metrics")))
 *
 * and `MetricsEndpoint` says where it listens (None when off). Nothing else is served there: other
 * paths are 404, other methods 405. Given its component, a listener serves that component's
 * metrics only (componentFilter): the registrar and the verifier always name theirs, so under
 * `attest up`, one process, each endpoint still serves its own.
 */
import { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Context, Effect, Layer, type MetricPair, Option } from "effect"
import type { AddressInfo } from "node:net"
import { formatAddress, serveNode } from "./listen.js"
import { ListenerTimeouts } from "./timeouts.js"
import { metricsCatalog } from "../ops/metrics.js"
import { PROMETHEUS_CONTENT_TYPE, scrapePrometheusWhere } from "../ops/prometheus.js"
import { nodeServer } from "./HttpServers.js"

/** The metrics listener's base URL (`http://127.0.0.1:9890`), None when it is off. */
export class MetricsEndpoint extends Context.Tag("attest/ops/MetricsEndpoint")<MetricsEndpoint, Option.Option<string>>() {}

export interface MetricsListenerOptions {
  /** For logs and bind errors, e.g. `registrar-metrics`. */
  readonly name: string
  /** Serve only this component's metrics (its own process serves every metric alike). */
  readonly component?: MetricsComponent
  readonly host: string
  /** 0 picks a free port (tests); `fromSection` turns a 0 into "off". */
  readonly port: number
}

/** Whose metrics a listener serves: one component's, or (a process of its own, the default) all. */
export type MetricsComponent = "registrar" | "verifier"

/**
 * One component's series: its own metrics (the catalog's `component`), and of the shared ones
 * (HTTP requests, database pool) those of its listeners and database. Under `attest up` the
 * registrar and the verifier share a process and a registry; each endpoint serves its own, so a
 * Prometheus scraping both counts nothing twice. A metric outside the catalog is served by both.
 */
export const componentFilter = (component: MetricsComponent) => {
  const owner = new Map(metricsCatalog.map((e) => [e.name, e.component] as const))
  return (pair: MetricPair.MetricPair.Untyped): boolean => {
    const of = owner.get(pair.metricKey.name)
    if (of === undefined) return true
    if (of !== "server") return of === component
    const where = pair.metricKey.tags.find((t) => t.key === "listener" || t.key === "database")?.value
    return where === undefined || where.startsWith(component)
  }
}

const metricsApp = (component: MetricsComponent | undefined) => Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const path = request.url.split("?", 1)[0]
  if (path !== "/metrics") return HttpServerResponse.text("Not Found: this listener serves GET /metrics only\n", { status: 404 })
  if (request.method !== "GET" && request.method !== "HEAD") {
    return HttpServerResponse.text("Method Not Allowed: GET /metrics\n", { status: 405, headers: { allow: "GET, HEAD" } })
  }
  const text = yield* scrapePrometheusWhere(component === undefined ? undefined : componentFilter(component))
  return HttpServerResponse.text(text, { contentType: PROMETHEUS_CONTENT_TYPE })
})

const listen = (o: MetricsListenerOptions) =>
  Layer.scoped(
    MetricsEndpoint,
    Effect.gen(function*() {
      const node = nodeServer({ timeouts: yield* ListenerTimeouts })
      const server = yield* serveNode(o.name, node, { host: o.host, port: o.port })
      // scrapes are not traced: one span per scrape would be most of a quiet server's traces
      yield* server.serve(metricsApp(o.component).pipe(Effect.withTracerEnabled(false)))
      const address = node.address() as AddressInfo
      const url = `http://${formatAddress(address.address, address.port)}`
      yield* Effect.logInfo(`${o.name} listening on ${url}/metrics`)
      return Option.some(url)
    })
  )

export const MetricsServer = {
  /** The listener on the given address (port 0: any free port). */
  layer: listen,

  /** From a server section's `metrics_ip` and `metrics_port`; port 0 = off. */
  fromSection: (section: { readonly metrics_ip: string; readonly metrics_port: number }, name: string, component?: MetricsComponent) =>
    section.metrics_port === 0
      ? Layer.succeed(MetricsEndpoint, Option.none<string>())
      : listen({ name, host: section.metrics_ip, port: section.metrics_port, ...(component === undefined ? {} : { component }) })
} as const
