/**
 * The verifier's routes over HTTPS (admin certificate) on SQLite: Keylime's v2.x API and the v3
 * JSON:API, fuzzed from its OpenAPI document. No 5xx, the family's envelope, nothing stored after a
 * refusal.
 */
import { afterAll, describe } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { DbLive } from "../../layers/Sql.js"
import { testDatabase } from "../support/db.js"
import { makeTestPki, removePki, startVerifier } from "../verifier/apiHarness.js"
import { recordedPolicyBase64, validBody } from "../verifier/support.js"
import { fuzzWith } from "./harness.js"
import { checkRequest, type Family, requestArb, type RouteServer, routesOf, snapshotRows } from "./routes.js"

const pki = makeTestPki()
afterAll(() => removePki(pki))

const AGENT = "d432fbb3-d2f1-4a97-9ef7-75bd81c00011"
const routes = routesOf("verifier")
const v3 = (template: string) => template.startsWith("/v3")
const DOCUMENTS = new Set(["/version", "/versions", "/openapi.json", "/.well-known/ear-jwks.json"])

/**
 * Which document a request is answered with: the documents above are their own JSON, /v3… is
 * JSON:API (but for /v3…/verify/*), the rest Keylime's envelope. Keylime's own answers without a body: `GET /` (307 to
 * /v3.0/, ver-root) and `GET /v3.0/` (200, the probe push agents send, push-model.md §1).
 */
const familyOf = (req: { readonly method: string; readonly path: string }): Family => {
  const p = req.path.split("?")[0]!
  if (req.method === "GET" && (p === "/" || /^\/v3(\.0)?\/$/.test(p))) return "none"
  if (DOCUMENTS.has(p)) return "any-json"
  // Keylime serves the one-shot verifications under v3 with the v2 envelope (docs/openapi/verifier.json)
  if (/^\/v3(\.[0-9]+)?\/verify\//.test(p)) return "keylime"
  return /^\/v3(\.[0-9]+)?(\/|$)/.test(p) ? "jsonapi" : "keylime"
}

const verifierServer = Effect.gen(function*() {
  const db = yield* testDatabase("sqlite")
  const v = yield* startVerifier({ pki, db })
  const rowsLayer = yield* Layer.build(DbLive(db, "verifier").pipe(Layer.orDie))
  const rows = () => Effect.runPromise(snapshotRows.pipe(Effect.provide(rowsLayer)))
  return { url: v.url, tls: pki.clients.admin, rows } satisfies RouteServer
})

const params = { agent_id: [AGENT, "agent-2"], name: ["rt1", "mb1"], session_id: ["1", "0"], index: ["0", "1", "latest"] }
const validBodies = {
  "/v{api_version}/agents/{agent_id}": validBody,
  "/v{api_version}/allowlists/{name}": () => ({ runtime_policy: recordedPolicyBase64() }),
  "/v{api_version}/mbpolicies/{name}": () => ({ mb_policy: "{}" })
}

describe("fuzz: verifier routes over HTTPS", () => {
  fuzzWith(verifierServer, {
    name: "verifier-v2-routes",
    runs: 120,
    input: requestArb(routes.filter((r) => !v3(r.template)), { params, validBodies, extraPaths: [...DOCUMENTS, "/"] }),
    check: (req, server) => checkRequest(server, req, familyOf)
  })

  fuzzWith(verifierServer, {
    name: "verifier-v3-routes",
    runs: 120,
    input: requestArb(routes.filter((r) => v3(r.template)), { params, extraPaths: [...DOCUMENTS, "/"] }),
    check: (req, server) => checkRequest(server, req, familyOf)
  })
})
