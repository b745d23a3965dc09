/**
 * Public GET routes whose answer never changes (`/version`: the versions a server serves), answered
 * by node's request listener before platform-node's (HttpServers.ts): the envelope is made once at
 * start-up and written to node's response. Through a fiber per request, the platform, the router,
 * the authorization middleware and the schema encoder, GET /version cost the server 4–6× a bare
 * node:https server's CPU for the same answer (bench/server-request.ts); as an HttpApp in front of
 * the platform still 2.5× (the fiber, its scope and contexts, the server span's switch). This is a
 * seam outside Effect's HttpApp on purpose, for these routes only: they read nothing and their
 * answer is a constant.
 *
 * What the router's answer has, this one has too: the same bytes and headers (a test compares
 * them), the provider asked for the route's public action, and the request counted in the metrics
 * under the router's route template. Anything else goes on to the platform and the router: another
 * method, a query string, a body, a version prefix, any other path. With an exporting tracer the
 * router serves them all, so each request keeps its server span (HttpServers.ts).
 */
import { type Effect, Exit, Runtime } from "effect"
import type * as http from "node:http"
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
  /** A string, not bytes: node then sends the head and the body in one write (a Buffer is a second one). */
  readonly body: string
  readonly headers: Readonly<Record<string, string>>
}

const ANONYMOUS = { _tag: "Anonymous", reason: "public operation: caller not identified" } as const

const prepare = (route: FixedRoute): Prepared => {
  // the envelope as envelope.ts writes it, serialized once
  const body = JSON.stringify({ code: 200, status: "Success", results: route.results })
  return { route, body, headers: { "content-type": "application/json", "content-length": String(Buffer.byteLength(body)) } }
}

/** The fixed routes by request target (`/version` and `/version/`, as the platform normalises it). */
const fixedRouteTable = (routes: ReadonlyArray<FixedRoute>): ReadonlyMap<string, Prepared> => {
  const table = new Map<string, Prepared>()
  for (const route of routes) {
    const prepared = prepare(route)
    table.set(route.path, prepared)
    table.set(`${route.path}/`, prepared)
  }
  return table
}

/**
 * Puts a listener for the fixed routes in front of the `request` listeners `node` has (the one
 * platform-node's serve() added): a fixed route is answered there, every other request goes on to
 * them. The returned function puts them back (before serve()'s finalizer removes its own). A
 * provider that refuses the public action leaves the request to the router, which answers the
 * refusal as it always has.
 */
export const answerFixedRoutesFirst = (
  node: http.Server,
  routes: ReadonlyArray<FixedRoute>,
  listener: Listener,
  provider: AuthorizationProviderShape,
  runtime: Runtime.Runtime<never>
): () => void => {
  const table = fixedRouteTable(routes)
  const runSync = Runtime.runSyncExit(runtime)
  const allowed = (route: FixedRoute) => Exit.isSuccess(runSync(provider.authorize({ action: route.action, operationClass: "public", identity: ANONYMOUS }) as Effect.Effect<void, unknown>))
  const handlers = node.listeners("request") as unknown as ReadonlyArray<(req: http.IncomingMessage, res: http.ServerResponse) => void>
  const front = (req: http.IncomingMessage, res: http.ServerResponse) => {
    const started = process.hrtime.bigint()
    const fixed = req.method === "GET" && !hasBody(req) ? table.get(req.url ?? "") : undefined
    if (fixed !== undefined && allowed(fixed.route)) {
      res.writeHead(200, fixed.headers).end(fixed.body)
      unsafeRecordHttpRequest(listener.name, "GET", fixed.route.path, 200, Number(process.hrtime.bigint() - started) / 1e9)
      return
    }
    for (const handler of handlers) handler.call(node, req, res)
  }
  node.removeAllListeners("request")
  node.on("request", front)
  return () => {
    node.off("request", front)
    for (const handler of handlers) node.on("request", handler)
  }
}
