/**
 * Public GET routes whose answer never changes (`/version`: the versions a server serves), answered
 * by an HttpApp in front of the platform and the router (HttpServers.ts): the envelope's bytes are
 * made once at start-up and written straight to node's response. Through the platform, the router,
 * the authorization middleware and the schema encoder, GET /version cost the server 3–4× a bare
 * node:https server's CPU for the same answer (bench/server-request.ts); here it is the request's
 * own fiber and little more.
 *
 * What the router's answer has, this one has too: the same bytes and headers (a test compares
 * them), the provider asked for the route's public action, and the request counted in the metrics
 * under the router's route template. Anything else goes on to the platform and the router: another
 * method, a query string, a body, a version prefix, any other path. With an exporting tracer the
 * router serves them all, so each request keeps its server span (HttpServers.ts).
 */
import { type HttpApp, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Context, Effect } from "effect"
import { unsafeRecordHttpRequest } from "../ops/metrics.js"
import type { AuthorizationProviderShape } from "./authorization.js"
import { hasBody } from "./body.js"
import type { Listener } from "./identity.js"

export interface FixedRoute {
  /** As the API declares it (unversioned): `/version`. Also the route label of the request metrics. */
  readonly path: string
  /** The public action put to the authorization provider, as the route's handler or middleware does. */
  readonly action: string
  /** The envelope's `results`, as the handler returns them (already in their encoded form). */
  readonly results: unknown
}

interface Prepared {
  readonly route: FixedRoute
  readonly body: Uint8Array
  readonly headers: Readonly<Record<string, string>>
}

const prepare = (route: FixedRoute): Prepared => {
  // the envelope as envelope.ts writes it, serialized once
  const body = new TextEncoder().encode(JSON.stringify({ code: 200, status: "Success", results: route.results }))
  return { route, body, headers: { "content-type": "application/json", "content-length": String(body.length) } }
}

/** The fixed routes by request target (`/version` and `/version/`, as the platform normalises it). */
export const fixedRouteTable = (routes: ReadonlyArray<FixedRoute>): ReadonlyMap<string, Prepared> => {
  const table = new Map<string, Prepared>()
  for (const route of routes) {
    const prepared = prepare(route)
    table.set(route.path, prepared)
    table.set(`${route.path}/`, prepared)
  }
  return table
}

/** The request this front app answers itself, or undefined (the platform's). */
export const fixedRouteOf = (table: ReadonlyMap<string, Prepared>, request: HttpServerRequest.HttpServerRequest): Prepared | undefined =>
  request.method === "GET" && !hasBody(request) ? table.get(request.url) : undefined

/**
 * The front app of one listener: a fixed route's answer, or `next`. A provider that refuses the
 * public action leaves the request to the router, which answers the refusal as it always has.
 */
export const fixedRoutesApp = (table: ReadonlyMap<string, Prepared>, listener: Listener, provider: AuthorizationProviderShape) =>
<E, R>(next: HttpApp.Default<E, R>): HttpApp.Default<E, R> =>
  Effect.withFiberRuntime((fiber) => {
    const request = Context.unsafeGet(fiber.currentContext, HttpServerRequest.HttpServerRequest)
    const fixed = fixedRouteOf(table, request)
    if (fixed === undefined) return next
    const started = process.hrtime.bigint()
    const anonymous = { _tag: "Anonymous", reason: "public operation: caller not identified" } as const
    return Effect.matchEffect(provider.authorize({ action: fixed.route.action, operationClass: "public", identity: anonymous }), {
      onFailure: () => next,
      onSuccess: () => {
        // written here, synchronously: platform-node's writer would wait for the flush on a fiber
        // resumed by node's callback, as much CPU as the rest of this answer (it sees the response ended)
        NodeHttpServerRequest.toServerResponse(request).writeHead(200, fixed.headers).end(fixed.body)
        unsafeRecordHttpRequest(listener.name, "GET", fixed.route.path, 200, Number(process.hrtime.bigint() - started) / 1e9)
        return Effect.succeed(HttpServerResponse.uint8Array(fixed.body, { status: 200, contentType: "application/json" }))
      }
    })
  })
