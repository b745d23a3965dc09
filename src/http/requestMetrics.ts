/**
 * HTTP request metrics of the platform (src/http/platform.ts): every answer counts in
 * `attest_http_requests_total{listener, method, route, status}` and its time in
 * `attest_http_request_duration_seconds{listener, route}` (src/ops/metrics.ts). The route is the
 * template the router matched (`/agents/:agent_id`, without the version prefix: routeLabels.ts,
 * from the router's own table); a request no route matched (unknown path or version, refused body)
 * counts as `unmatched`, so ids in paths never become labels.
 */
import { HttpServerRequest, type HttpServerResponse } from "@effect/platform"
import { Clock, Context, Effect, Exit } from "effect"
import { unsafeRecordHttpRequest } from "../ops/metrics.js"
import { currentListener } from "./identity.js"

/**
 * Counts and times each request answered by `app`, under the route `route()` names once it is
 * answered (the fiber's Clock read directly: two Effects fewer per request).
 */
export const recordRequestMetrics = (route: () => string) =>
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
      unsafeRecordHttpRequest(listener, request.method, route(), status, Number(clock.unsafeCurrentTimeNanos() - start) / 1e9)
      return Effect.void
    })
  })
