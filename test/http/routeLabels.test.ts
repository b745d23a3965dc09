/**
 * routeLabels (the request metrics' route label without the server span) names the route Effect's
 * own router matches, for every route of the verifier's and the registrar's APIs with the routes
 * their servers add (the 405 catch-all, /openapi.json): each request is put to a real HttpRouter
 * whose handlers answer with their template, and the two must agree.
 */
import { HttpApp, type HttpMethod, HttpRouter, HttpServerResponse } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { UNMATCHED_ROUTE } from "../../src/ops/metrics.js"
import { RegistrarApi } from "../../src/registrar/Api.js"
import { routeLabels } from "../../src/http/routeLabels.js"
import { type RouteTemplate, routesOf } from "../../src/http/routes.js"
import { VerifierApi } from "../../src/verifier/http/Api.js"

/** The router's choice: its handlers answer with their template in a header; no route, no header. */
const routerLabel = (routes: ReadonlyArray<RouteTemplate>) => {
  let router: HttpRouter.HttpRouter = HttpRouter.empty
  for (const route of routes) {
    const answer = Effect.succeed(HttpServerResponse.setHeader(HttpServerResponse.empty(), "x-route", route.path))
    router = HttpRouter.route(route.method as HttpMethod.HttpMethod | "*")(router, route.path as HttpRouter.PathInput, answer)
  }
  const handler = HttpApp.toWebHandler(router)
  return async (method: string, url: string): Promise<string> => {
    const response = await handler(new Request(`http://localhost${url}`, { method }))
    const route = response.headers.get("x-route")
    return route === null || route === "*" ? UNMATCHED_ROUTE : route
  }
}

/** Requests for every template (parameters filled in), and the cases where a router's order matters. */
const requestsFor = (routes: ReadonlyArray<RouteTemplate>): ReadonlyArray<readonly [string, string]> => {
  const out: Array<readonly [string, string]> = []
  for (const route of routes) {
    if (route.path === "*") continue
    const concrete = route.path.replace(/:[a-z_]+/g, "x1")
    for (const method of ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"]) {
      out.push([method, concrete], [method, `${concrete}?bulk=True&verifier=`], [method, `${concrete}/more`])
    }
    // a parameter that happens to spell a static segment of another route
    out.push(["GET", route.path.replace(/:[a-z_]+/g, "latest")], ["GET", route.path.replace(/:[a-z_]+/g, "attestations")])
  }
  out.push(["GET", "/"], ["GET", "/nothing-here"], ["GET", "/agents/a%62c"], ["GET", "/age%6Ets"], ["GET", "/agents/a%2Fb"], ["GET", "/agents/%E0%A4%A"], ["OPTIONS", "/agents"], ["GET", "/agents/"], ["GET", "//agents"])
  // the router's reading of a path: case, separators, long parameters
  out.push(["GET", "/AGENTS"], ["GET", "/Agents/X1"], ["GET", "/agents;jsessionid=1"], ["GET", "/agents/x1;a=b"], ["GET", "/agents#frag"])
  for (const n of [100, 101, 150]) out.push(["GET", `/agents/${"a".repeat(n)}`], ["PUT", `/agents/${"a".repeat(n)}/stop`], ["PATCH", `/agents/${"a".repeat(n)}`])
  return out
}

describe("the request metrics' route label", () => {
  for (const [name, api] of [["verifier", VerifierApi], ["registrar", RegistrarApi]] as const) {
    it.effect(`is the route Effect's router matches, for every route of the ${name} and its catch-all`, () =>
      Effect.promise(async () => {
        const routes: ReadonlyArray<RouteTemplate> = [...routesOf(api), { method: "GET", path: "/openapi.json" }, { method: "*", path: "*" }]
        const label = routeLabels(routes)
        const router = routerLabel(routes)
        const requests = requestsFor(routes)
        const disagreements: Array<string> = []
        for (const [method, url] of requests) {
          const expected = await router(method, url)
          const got = label(method, url)
          if (got !== expected) disagreements.push(`${method} ${url}: router ${expected}, label ${got}`)
        }
        expect(disagreements).toEqual([])
        // the test covers real matches, not only refusals
        expect(requests.filter(([m, u]) => label(m, u) !== UNMATCHED_ROUTE).length).toBeGreaterThan(routes.length)
      }))
  }

  it("is unmatched without a catch-all when no route matches, and HEAD takes a GET route", () => {
    const label = routeLabels([{ method: "GET", path: "/agents/:agent_id" }, { method: "POST", path: "/agents" }])
    expect([label("GET", "/agents/x"), label("HEAD", "/agents/x"), label("GET", "/agents"), label("GET", "/nothing")]).toEqual([
      "/agents/:agent_id",
      "/agents/:agent_id",
      UNMATCHED_ROUTE,
      UNMATCHED_ROUTE
    ])
  })
})
