/**
 * The verifier's authorization matrix (spec §5.2) over HTTPS: no client certificate, a certificate
 * from another CA, an expired one, one without the Client Authentication EKU, and an admin
 * certificate sent with a bearer token (the header makes it an agent attempt, never an admin),
 * each against every route, with Keylime's texts naming the action; nothing is stored by a refused
 * request; the public routes answer everyone; an admin gets past authorization on every route.
 */
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { testDatabase } from "../support/db.js"
import { makeTestPki, removePki, startVerifier, summary, vcall, type Who } from "./apiHarness.js"
import { record, recordedPolicyBase64, validBody } from "./support.js"

const pki = makeTestPki()
afterAll(() => removePki(pki))

const A = "d432fbb3-d2f1-4a97-9ef7-75bd81c00011"

interface Route {
  readonly action: string
  readonly method: string
  readonly path: string
  readonly json?: () => unknown
}

/** Every admin (or agent-or-admin) route of the v2 API, with a body that an admin may send. */
const ROUTES: ReadonlyArray<Route> = [
  { action: "list_agents", method: "GET", path: "/v2.6/agents/" },
  { action: "list_agents", method: "GET", path: "/v2.6/agents/?bulk=true" },
  { action: "read_agent", method: "GET", path: `/v2.6/agents/${A}` },
  { action: "create_agent", method: "POST", path: "/v2.6/agents/d432fbb3-d2f1-4a97-9ef7-75bd81c00099", json: validBody },
  { action: "stop_agent", method: "PUT", path: `/v2.6/agents/${A}/stop` },
  { action: "reactivate_agent", method: "PUT", path: `/v2.6/agents/${A}/reactivate` },
  { action: "delete_agent", method: "DELETE", path: `/v2.6/agents/${A}` },
  { action: "list_runtime_policies", method: "GET", path: "/v2.6/allowlists/" },
  { action: "read_runtime_policy", method: "GET", path: "/v2.6/allowlists/rt1" },
  { action: "create_runtime_policy", method: "POST", path: "/v2.6/allowlists/rt-new", json: () => ({ runtime_policy: recordedPolicyBase64() }) },
  { action: "update_runtime_policy", method: "PUT", path: "/v2.6/allowlists/rt1", json: () => ({ runtime_policy: recordedPolicyBase64() }) },
  { action: "delete_runtime_policy", method: "DELETE", path: "/v2.6/allowlists/rt1" },
  { action: "delete_runtime_policy", method: "DELETE", path: "/v2.6/allowlist/rt1" },
  { action: "list_mb_policies", method: "GET", path: "/v2.6/mbpolicies/" },
  { action: "read_mb_policy", method: "GET", path: "/v2.6/mbpolicies/mb1" },
  { action: "create_mb_policy", method: "POST", path: "/v2.6/mbpolicies/mb-new", json: () => ({ mb_policy: "{}" }) },
  { action: "update_mb_policy", method: "PUT", path: "/v2.6/mbpolicies/mb1", json: () => ({ mb_policy: "{}" }) },
  { action: "delete_mb_policy", method: "DELETE", path: "/v2.6/mbpolicies/mb1" }
]

const denial = (action: string) =>
  action === "read_agent" ? `Action ${action} requires authentication` : `Action ${action} requires admin authentication (mTLS certificate)`

type Caller = { readonly who: Who; readonly bearer?: boolean }
const NOT_ADMINS: ReadonlyArray<Caller> = [{ who: "none" }, { who: "foreign" }, { who: "expired" }, { who: "noClientAuth" }, { who: "admin", bearer: true }]

describe("verifier authorization matrix (SQLite, HTTPS)", () => {
  it.scopedLive("refuses every admin route to every caller but an admin certificate without a bearer token; nothing is stored", () =>
    Effect.gen(function*() {
      const db = yield* testDatabase("sqlite")
      const v = yield* startVerifier({ pki, db })
      const admin = (method: string, path: string, json?: unknown) => vcall(pki, v, { method, path, ...(json === undefined ? {} : { json }) })
      expect((yield* admin("POST", `/v2.6/agents/${A}`, validBody())).status).toBe(200)
      expect((yield* admin("POST", "/v2.6/allowlists/rt1", { runtime_policy: recordedPolicyBase64() })).status).toBe(201)
      expect((yield* admin("POST", "/v2.6/mbpolicies/mb1", { mb_policy: "{}" })).status).toBe(201)
      // what is stored: the status without seconds_since_verified_quote, which the clock moves
      const stored = Effect.gen(function*() {
        return {
          agents: JSON.parse(JSON.stringify((yield* admin("GET", "/v2.6/agents/?bulk=true")).json, (k, v) => k === "seconds_since_verified_quote" ? undefined : v)),
          runtime: (yield* admin("GET", "/v2.6/allowlists/")).json,
          mb: (yield* admin("GET", "/v2.6/mbpolicies/")).json
        }
      })
      const before = yield* stored

      for (const caller of NOT_ADMINS) {
        for (const route of ROUTES) {
          const r = yield* vcall(pki, v, {
            method: route.method,
            path: route.path,
            who: caller.who,
            ...(route.json === undefined ? {} : { json: route.json() }),
            ...(caller.bearer === true ? { headers: { authorization: "Bearer not-a-token" } } : {})
          })
          const label = `${caller.who}${caller.bearer === true ? "+bearer" : ""} ${route.method} ${route.path}`
          expect(summary(r), label).toEqual({ status: 403, text: denial(route.action), results: {} })
        }
      }
      expect(yield* stored).toEqual(before)

      // an admin gets past authorization on every route (none of these answers is a 403)
      for (const route of ROUTES) {
        const r = yield* admin(route.method, route.path, route.json?.())
        expect(r.status, `admin ${route.method} ${route.path}`).not.toBe(403)
        expect(r.status, `admin ${route.method} ${route.path}`).toBeLessThan(500)
      }
    }))

  it.scopedLive("serves the public routes to every caller: /version, /versions, /openapi.json, verify/identity, verify/evidence", () =>
    Effect.gen(function*() {
      const db = yield* testDatabase("sqlite")
      const v = yield* startVerifier({ pki, db })
      const identityQuery = record("ver-identity-unknown-agent").request.query!
      const evidence = record("ver-evidence-ok-runtime-policy").request.body
      for (const caller of [...NOT_ADMINS, { who: "admin" as const }]) {
        const headers = caller.bearer === true ? { headers: { authorization: "Bearer not-a-token" } } : {}
        for (const path of ["/version", "/versions", "/openapi.json"]) {
          expect((yield* vcall(pki, v, { method: "GET", path, who: caller.who, ...headers })).status, `${caller.who} ${path}`).toBe(200)
        }
        const identity = yield* vcall(pki, v, {
          method: "GET",
          path: `/v2.6/verify/identity?${new URLSearchParams(identityQuery).toString()}`,
          who: caller.who,
          ...headers
        })
        expect(summary(identity), `${caller.who} identity`).toEqual({ status: 404, text: "agent id not found", results: {} })
        const ev = yield* vcall(pki, v, { method: "POST", path: "/v2.6/verify/evidence", who: caller.who, json: evidence, ...headers })
        expect(summary(ev).status, `${caller.who} evidence`).toBe(200)
        expect((summary(ev).results as { valid: boolean }).valid, `${caller.who} evidence`).toBe(true)
      }
    }))
})
