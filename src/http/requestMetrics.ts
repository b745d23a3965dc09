/**
 * HTTP request metrics of the platform (src/http/platform.ts): every answer counts in
 * `attest_http_requests_total{listener, method, route, status}` and its time in
 * `attest_http_request_duration_seconds{listener, route}` (src/ops/metrics.ts). The route is the
 * template the router itself matched (`/agents/:agent_id`, without the version prefix): each route
 * of the router writes its template into the request's cell as it is reached (`labelRoutes`). A
 * request no route matched (unknown path or version, refused body, the 405/404 catch-all `*`)
 * counts as `unmatched`, so ids in paths never become labels.
 *
 * The router also writes the template on the request's server span (`http.route`), but a listener
 * serves without that span when no exporter would read it (HttpServers.ts).
 */
import { HttpRouter, HttpServerRequest, type HttpServerResponse } from "@effect/platform"
import { Chunk, Clock, Context, Effect, Exit, FiberRef, Option } from "effect"
import { UNMATCHED_ROUTE, unsafeRecordHttpRequest } from "../ops/metrics.js"
import { currentListener } from "./identity.js"

/** The route a request reached, written by the router's route (labelRoutes) and read as it is answered. */
export interface MatchedRoute {
  route: string
}

/** The request's cell (platform.ts sets a new one per request); none outside the platform. */
export const currentMatchedRoute = FiberRef.unsafeMake<MatchedRoute | undefined>(undefined)

/** A fresh cell for one request: unmatched until a route writes it. */
export const matchedRouteCell = (): MatchedRoute => ({ route: UNMATCHED_ROUTE })

/** `handler`, writing `path` into the request's cell first (on the same fiber: the router runs routes inline). */
const noteRoute = <E, R>(path: string, handler: HttpRouter.Route.Handler<E, R>): HttpRouter.Route.Handler<E, R> =>
  Effect.withFiberRuntime((fiber) => {
    const cell = fiber.getFiberRef(currentMatchedRoute)
    if (cell !== undefined) cell.route = path
    return handler
  })

/**
 * The same router, each route noting its template as the router reaches it; the catch-all `*`
 * (routes.ts: a 405, or the 404 of no route) notes nothing, and mounted apps keep no template.
 */
export const labelRoutes = <E, R>(router: HttpRouter.HttpRouter<E, R>): HttpRouter.HttpRouter<E, R> => {
  let labelled = HttpRouter.fromIterable(Chunk.map(router.routes, (route) =>
    route.path === "*" ? route : HttpRouter.makeRoute(route.method, route.path, noteRoute(route.path, route.handler), {
      prefix: Option.getOrUndefined(route.prefix),
      uninterruptible: route.uninterruptible
    }) as HttpRouter.Route<E, R>
  ))
  for (const [path, app, options] of router.mounts) labelled = HttpRouter.mountApp(labelled, path as `/${string}`, app, options)
  return labelled
}

/**
 * Counts and times each request answered by `app`, under the route its `cell` holds once it is
 * answered (the fiber's Clock read directly: two Effects fewer per request).
 */
export const recordRequestMetrics = (cell: MatchedRoute) =>
<E, R>(
  app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R> =>
  Effect.withFiberRuntime((fiber) => {
    const request = Context.unsafeGet(fiber.currentContext, HttpServerRequest.HttpServerRequest)
    const listener = fiber.getFiberRef(currentListener).name
    const clock = Context.get(fiber.currentDefaultServices, Clock.Clock)
    const start = clock.unsafeCurrentTimeNanos()
    return Effect.onExit(app, (exit) => {
      const status = Exit.isSuccess(exit) ? exit.value.status : 500
      unsafeRecordHttpRequest(listener, request.method, cell.route, status, Number(clock.unsafeCurrentTimeNanos() - start) / 1e9)
      return Effect.void
    })
  })
