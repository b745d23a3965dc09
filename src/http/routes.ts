/**
 * Which methods a server serves on which route templates, so that a request whose path exists
 * under other methods is answered 405 with `Allow` (as Keylime's router does) rather than 404.
 * The table comes from the server's HttpApi (`routesOf`), so it cannot drift from the routes;
 * `serveMethodNotAllowed(routes)` is a catch-all router route that answers the 405 and hands any
 * other unmatched request back as RouteNotFound (the platform's 404).
 */
import { HttpApi, HttpApiBuilder, HttpServerError, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, FiberRef } from "effect"
import { StatusText } from "../../schemas/Envelope.js"
import { envelopeResponse, originalRequestLine } from "./envelope.js"
import { UNMATCHED_ROUTE } from "../ops/metrics.js"

export interface RouteTemplate {
  readonly method: string
  /** As declared, without the version prefix: `/agents/:agent_id`. */
  readonly path: string
}

/** Every endpoint's method and path template of an HttpApi. */
export const routesOf = (api: HttpApi.HttpApi.Any): ReadonlyArray<RouteTemplate> => {
  const routes: Array<RouteTemplate> = []
  HttpApi.reflect(api as HttpApi.HttpApi.AnyWithProps, {
    onGroup: () => {},
    onEndpoint: ({ endpoint }) => void routes.push({ method: endpoint.method, path: endpoint.path })
  })
  return routes
}

const templateRegExp = (path: string): RegExp =>
  new RegExp(`^${path.split("/").map((s) => (s.startsWith(":") ? "[^/]+" : s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"))).join("/")}$`)

/**
 * `(method, path) → the methods served on that path` when the method is not one of them (a 405),
 * or undefined (served, or no such path: the router answers).
 */
export const methodChecker = (routes: ReadonlyArray<RouteTemplate>) => {
  const compiled = routes.map((r) => ({ method: r.method.toUpperCase(), re: templateRegExp(r.path) }))
  return (method: string, path: string): ReadonlyArray<string> | undefined => {
    const allowed = [...new Set(compiled.filter((r) => r.re.test(path)).map((r) => r.method))]
    return allowed.length === 0 || allowed.includes(method.toUpperCase()) ? undefined : allowed
  }
}

/**
 * A catch-all route (lowest priority in the router): a path served under other methods only is
 * 405 with the envelope and `Allow`; anything else is RouteNotFound as without it.
 */
export const serveMethodNotAllowed = (routes: ReadonlyArray<RouteTemplate>) => {
  const otherMethods = methodChecker(routes)
  return HttpApiBuilder.Router.use((router) =>
    router.all(
      "*",
      Effect.gen(function*() {
        // the router named this request's route "*" on its server span (if it has one): unmatched, as in the metrics
        yield* Effect.annotateCurrentSpan("http.route", UNMATCHED_ROUTE)
        const request = yield* HttpServerRequest.HttpServerRequest
        const path = request.url.split("?")[0] ?? "/"
        const allowed = otherMethods(request.method, path)
        if (allowed === undefined) return yield* Effect.fail(new HttpServerError.RouteNotFound({ request }))
        // the path as the client wrote it (with its version prefix), for the text
        const line = yield* FiberRef.get(originalRequestLine)
        return HttpServerResponse.setHeader(
          envelopeResponse(405, StatusText.methodNotAllowed(request.method, line.path, allowed)),
          "allow",
          allowed.join(", ")
        )
      })
    )
  )
}
