/**
 * The authorization matrix of the API 3.0 administration routes over HTTPS, on SQLite and
 * PostgreSQL (spec §5.2, §7.3): anonymous, admin by mTLS, the agent itself with its token, another
 * agent, an expired token, the agent's token plus a valid admin certificate (treated as the agent:
 * never a fallback to mTLS), a malformed header. Exact statuses and texts. The admin's reactivation
 * of the agent ends its token (a token is bound to its enrolment): its DELETE, the last route, sees
 * the token refused. Then a push agent's administration: its resource with the push block, PATCH
 * accept_attestations (TIMEOUT and back), reactivate forgetting its failures.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { backends } from "../verifier/support.js"
import { ADMIN, callAs, callers, EXPIRED, FORMAT, matrixTokens, OWNER, type Route, runMatrix } from "./authorizationMatrix.js"
import { EndedText } from "../../src/verifier/http/v3/auth.js"
import { attestOnce, enrol, openSession, PushTestEnv, pushVerifier, simulatedAgent, verdict } from "./support.js"

const A = "aaaaaaaa-0000-4000-8000-000000000001"
const B = "bbbbbbbb-0000-4000-8000-000000000002"
const C = "cccccccc-0000-4000-8000-000000000003"
/** The target of the routes that change or delete: no session of its own. */
const D = "dddddddd-0000-4000-8000-000000000004"


const adminOnly = { anonymous: [403, ADMIN], admin: "ok", own: [403, ADMIN], other: [403, ADMIN], expired: [401, EXPIRED], ownPlusAdmin: [403, ADMIN], malformed: [401, FORMAT] } as const
const agentOrAdmin = { ...adminOnly, own: "ok", ownPlusAdmin: "ok", other: [403, OWNER] } as const
const everyone = { anonymous: "ok", admin: "ok", own: "ok", other: "ok", expired: "ok", ownPlusAdmin: "ok", malformed: "ok" } as const

// bodies an admin's request refuses after authorization (422), so the matrix changes nothing
const badAgent = { data: { type: "agent", id: "x", attributes: {} } }
const noChange = { data: { type: "agent", attributes: { colour: "blue" } } }
const badIma = { data: { type: "ima_policy", id: "p", attributes: {} } }
const badUefi = { data: { type: "uefi_refstate", id: "r", attributes: { mb_policy: 7 } } }

const routes: ReadonlyArray<Route> = [
  { method: "GET", path: "/", expect: everyone },
  { method: "GET", path: "/v3.0/verify/identity", expect: everyone },
  { method: "POST", path: "/v3.0/verify/evidence", body: {}, expect: everyone },
  { method: "GET", path: "/v3.0/agents", expect: adminOnly },
  { method: "POST", path: "/v3.0/agents", body: badAgent, expect: adminOnly },
  { method: "GET", path: `/v3.0/agents/${A}`, expect: agentOrAdmin },
  { method: "PATCH", path: `/v3.0/agents/${A}`, body: noChange, expect: adminOnly },
  { method: "PATCH", path: `/v3.0/agents/${D}`, body: noChange, expect: adminOnly },
  { method: "PUT", path: `/v3.0/agents/${D}/stop`, expect: adminOnly },
  { method: "PUT", path: `/v3.0/agents/${D}/reactivate`, expect: adminOnly },
  { method: "GET", path: "/v3.0/policies/ima", expect: adminOnly },
  { method: "POST", path: "/v3.0/policies/ima", body: badIma, expect: adminOnly },
  { method: "GET", path: "/v3.0/policies/ima/none", expect: adminOnly },
  { method: "PATCH", path: "/v3.0/policies/ima/none", body: badIma, expect: adminOnly },
  { method: "DELETE", path: "/v3.0/policies/ima/none", expect: adminOnly },
  { method: "GET", path: "/v3.0/refstates/uefi", expect: adminOnly },
  { method: "POST", path: "/v3.0/refstates/uefi", body: badUefi, expect: adminOnly },
  { method: "GET", path: "/v3.0/refstates/uefi/none", expect: adminOnly },
  { method: "PATCH", path: "/v3.0/refstates/uefi/none", body: badUefi, expect: adminOnly },
  { method: "DELETE", path: "/v3.0/refstates/uefi/none", expect: adminOnly },
  // the last two: the admin's reactivation of A ends A's token, its delete removes A
  { method: "PUT", path: `/v3.0/agents/${A}/reactivate`, expect: adminOnly },
  { method: "DELETE", path: `/v3.0/agents/${A}`, expect: { ...adminOnly, own: [401, EndedText.reactivated], ownPlusAdmin: [401, EndedText.reactivated] } }
]

describe.each(backends)("v3 administration authorization on %s", (backend, available) => {
  it.live.skipIf(!available)("every administration route, every kind of caller", () =>
    Effect.gen(function*() {
      const env = yield* PushTestEnv
      for (const id of [A, B, C, D]) yield* enrol(id)
      const tokens = yield* matrixTokens({ own: A, other: B, expired: C })
      // the admin's reactivation and DELETE of A are the last calls of their routes: the other callers go first
      const ordered = (r: Route) => (r.path === `/v3.0/agents/${A}` && r.method === "DELETE") || r.path === `/v3.0/agents/${A}/reactivate`
        ? [...callers.filter((c) => c !== "admin"), "admin" as const]
        : callers
      yield* runMatrix(routes, callAs(env, tokens), ordered)
      // the admin's DELETE happened (a push agent is deleted at once); D was stopped and reactivated, nothing else changed it
      expect((yield* env.request("GET", `/v3.0/agents/${A}`, { admin: true })).status).toEqual(404)
      const d = yield* env.request("GET", `/v3.0/agents/${D}`, { admin: true })
      expect([d.status, d.json.data.attributes.operational_state]).toEqual([200, 1])
    }).pipe(Effect.provide(Layer.merge(pushVerifier(backend), simulatedAgent("v3-admin-authz")))), 180_000)

  it.live.skipIf(!available)("a push agent: its resource, PATCH accept_attestations, reactivate", () =>
    Effect.gen(function*() {
      const env = yield* PushTestEnv
      const admin = { admin: true } as const
      yield* enrol(A)
      // a push agent from its enrolment: accepting, nothing attested yet
      const before = yield* env.request("GET", `/v3.0/agents/${A}`, admin)
      expect([before.status, before.json.data.attributes.push]).toEqual([200, {
        accept_attestations: true,
        consecutive_attestation_failures: 0,
        last_received_attestation: null,
        attestation_deadline: null,
        latest_attestation: null
      }])

      const token = (yield* openSession(A)).token!
      const first = yield* attestOnce(A, token)
      expect(first.submitted?.status).toEqual(202)
      expect((yield* verdict(A)).json.data.attributes.evaluation).toEqual("pass")

      const own = yield* env.request("GET", `/v3.0/agents/${A}`, { token })
      const p = own.json.data.attributes
      expect([own.status, p.attestation_status, p.attestation_count, p.push.accept_attestations, p.push.consecutive_attestation_failures, p.push.latest_attestation])
        .toEqual([200, "PASS", 1, true, 0, { index: 0, stage: "verification_complete", evaluation: "pass", failure_reason: null }])
      const listed = yield* env.request("GET", "/v3.0/agents", admin)
      expect(listed.json.data.map((r: any) => [r.id, r.attributes.push?.accept_attestations])).toEqual([[A, true]])

      // refused as a missed deadline refuses them: TIMEOUT; then accepted again
      const off = yield* env.request("PATCH", `/v3.0/agents/${A}`, { ...admin, body: { data: { type: "agent", id: A, attributes: { accept_attestations: false } } } })
      expect([off.status, off.json.data.attributes.attestation_status, off.json.data.attributes.push.accept_attestations]).toEqual([200, "TIMEOUT", false])
      const on = yield* env.request("PATCH", `/v3.0/agents/${A}`, { ...admin, body: { data: { type: "agent", attributes: { accept_attestations: true } } } })
      expect([on.status, on.json.data.attributes.attestation_status, on.json.data.attributes.push.accept_attestations]).toEqual([200, "PASS", true])
      const wrong = yield* env.request("PATCH", `/v3.0/agents/${A}`, { ...admin, body: { data: { type: "agent", attributes: { accept_attestations: "yes" } } } })
      expect([wrong.status, wrong.json.errors[0].source.pointer, wrong.json.errors[0].detail]).toEqual([422, "/data/attributes/accept_attestations", "Attribute 'accept_attestations' must be true or false."])

      // a failure, then reactivate: failures forgotten, PASS again (the v2 domain's reactivate)
      const sql = yield* SqlClient.SqlClient
      yield* sql`UPDATE push_agents SET consecutive_failures = 2, accept_attestations = 0 WHERE agent_id = ${A}`
      expect((yield* env.request("GET", `/v3.0/agents/${A}`, admin)).json.data.attributes.attestation_status).toEqual("FAIL")
      expect((yield* env.request("PUT", `/v3.0/agents/${A}/reactivate`, admin)).status).toEqual(204)
      const after = (yield* env.request("GET", `/v3.0/agents/${A}`, admin)).json.data.attributes
      expect([after.attestation_status, after.push.accept_attestations, after.push.consecutive_attestation_failures]).toEqual(["PASS", true, 0])
    }).pipe(Effect.provide(Layer.merge(pushVerifier(backend), simulatedAgent("v3-admin-push")))), 180_000)
})
