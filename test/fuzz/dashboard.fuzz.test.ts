/**
 * The dashboard's pages and JSON API (plain HTTP on loopback, read-only) in front of a real registrar
 * and verifier: no 5xx, JSON for everything but the page and its assets, and only on its own address.
 */
import { afterAll, describe } from "@effect/vitest"
import { Effect, FastCheck as fc } from "effect"
import { makeTestPki, removePki, startFleet } from "../dashboard/harness.js"
import { fuzzWith } from "./harness.js"
import { checkRequest, type Family, requestArb, type Route } from "./routes.js"

const pki = makeTestPki()
afterAll(() => removePki(pki))

const AGENT = "d432fbb3-d2f1-4a97-9ef7-75bd81c00051"
const get = (template: string): Route => ({ method: "GET", template, bodyKeys: [], queryKeys: ["since", "window"] })
// /api/events is a stream that stays open: the fuzzer leaves it to test/dashboard/server.test.ts
const routes = ["/", "/index.html", "/assets/{asset}", "/api/overview", "/api/policies", "/api/registrar", "/api/agents/{agent_id}"].map(get)

const dashboardServer = Effect.gen(function*() {
  const fleet = yield* startFleet(pki, { intervalMs: 200 })
  yield* fleet.register(AGENT)
  yield* fleet.addToVerifier(AGENT)
  const url = new URL(fleet.dashboardUrl)
  return { url: url.origin, tls: undefined, rows: undefined, host: url.host }
})

const familyOf = (req: { readonly path: string }): Family => {
  // the path as the server resolves it ("/./" is the page)
  const p = new URL(`http://x${req.path.startsWith("/") ? req.path : "/"}`).pathname
  return p === "/" || p === "/index.html" || p.startsWith("/assets/") ? "none" : "any-json"
}

describe("fuzz: dashboard", () => {
  fuzzWith(dashboardServer, {
    name: "dashboard-routes",
    runs: 100,
    input: requestArb(routes, {
      params: { agent_id: [AGENT, "unknown-agent"], asset: ["app.js", "style.css", "index.html", "..%2Findex.html"] },
      extraPaths: ["/", "/api/", "/api", "/assets/"],
      headers: fc.option(fc.constantFrom("localhost", "evil.example", "127.0.0.1", "", "[::1]:1"), { nil: undefined }).map((host): Record<string, string> => (host === undefined ? {} : { host }))
    }),
    check: (req, server) => checkRequest(server, req, familyOf)
  })
})
