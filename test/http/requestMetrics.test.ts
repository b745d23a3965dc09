/**
 * The request metrics' route label is the route Effect's router itself matched (labelRoutes): each
 * request is put to a real HttpRouter with the verifier's routes and the servers' catch-all, and
 * the label the matched route wrote is compared with the template of the route that answered.
 */
import { HttpApp, type HttpMethod, HttpRouter, HttpServerResponse } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { UNMATCHED_ROUTE } from "../../src/ops/metrics.js"
import { currentMatchedRoute, labelRoutes, matchedRouteCell } from "../../src/http/requestMetrics.js"
import { type RouteTemplate, routesOf } from "../../src/http/routes.js"
import { VerifierApi } from "../../src/verifier/http/Api.js"

/** A router whose routes answer with their template in a header, labelled; each request with its own cell. */
const serve = (routes: ReadonlyArray<RouteTemplate>) => {
  let router: HttpRouter.HttpRouter = HttpRouter.empty
  for (const route of routes) {
    const answer = Effect.succeed(HttpServerResponse.setHeader(HttpServerResponse.empty(), "x-route", route.path))
    router = HttpRouter.route(route.method as HttpMethod.HttpMethod | "*")(router, route.path as HttpRouter.PathInput, answer)
  }
  const labelled = labelRoutes(router)
  // one request at a time: each is given its own cell as it starts
  let cell = matchedRouteCell()
  const handler = HttpApp.toWebHandler(Effect.suspend(() => Effect.locally(labelled, currentMatchedRoute, cell)))
  return async (method: string, url: string): Promise<{ readonly answered: string; readonly label: string }> => {
    cell = matchedRouteCell()
    const response = await handler(new Request(`http://localhost${url}`, { method }))
    return { answered: response.headers.get("x-route") ?? "(none)", label: cell.route }
  }
}

describe("the request metrics' route label", () => {
  it.effect("is the template of the verifier route the router matched, and unmatched for the catch-all and no route", () =>
    Effect.promise(async () => {
      const routes: ReadonlyArray<RouteTemplate> = [...routesOf(VerifierApi), { method: "*", path: "*" }]
      const request = serve(routes)
      const mismatches: Array<string> = []
      let matched = 0
      for (const route of routes) {
        if (route.path === "*") continue
        const concrete = route.path.replace(/:[a-z_]+/g, "x1")
        for (const method of ["GET", "POST", "PUT", "DELETE", "HEAD"]) {
          for (const url of [concrete, `${concrete}?bulk=True`, `${concrete}/more`]) {
            const { answered, label } = await request(method, url)
            const expected = answered === "*" || answered === "(none)" ? UNMATCHED_ROUTE : answered
            if (label !== expected) mismatches.push(`${method} ${url}: answered by ${answered}, labelled ${label}`)
            if (label !== UNMATCHED_ROUTE) matched++
          }
        }
      }
      expect(mismatches).toEqual([])
      // real matches, not only refusals
      expect(matched).toBeGreaterThan(routes.length)
    }))

  it.effect("takes the GET route for HEAD, and never a path the client chose", () =>
    Effect.promise(async () => {
      const request = serve([{ method: "GET", path: "/agents/:agent_id" }, { method: "POST", path: "/agents" }])
      const labels = []
      for (const [method, url] of [["GET", "/agents/abc?x=1"], ["HEAD", "/agents/abc"], ["GET", "/agents"], ["GET", `/agents/${"a".repeat(150)}`], ["GET", "/nothing/here/at/all"]] as const) {
        labels.push(await request(method, url))
      }
      expect(labels.map((l) => l.label)).toEqual(["/agents/:agent_id", "/agents/:agent_id", UNMATCHED_ROUTE, UNMATCHED_ROUTE, UNMATCHED_ROUTE])
    }))

  it.effect("is written nowhere when the router runs outside the platform (no cell)", () =>
    Effect.promise(async () => {
      let router: HttpRouter.HttpRouter = HttpRouter.empty
      router = HttpRouter.get(router, "/agents/:agent_id", Effect.succeed(HttpServerResponse.text("ok")))
      const response = await HttpApp.toWebHandler(labelRoutes(router))(new Request("http://localhost/agents/a"))
      expect([response.status, await response.text()]).toEqual([200, "ok"])
    }))
})
