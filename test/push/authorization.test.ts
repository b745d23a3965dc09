/**
 * The authorization matrix of every v3 route over HTTPS (spec §5.2, §7.3; push-model.md §5):
 * anonymous, admin by mTLS, the agent itself, another agent, an expired token, a token plus a valid
 * admin certificate (treated as the agent: never a fallback to mTLS), a malformed header. Exact
 * statuses and texts. The admin's reactivation (the last route) ends the agent's token; a newer
 * session ends the one before, each refused saying why.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { ADMIN, AGENT, callAs, callers, EXPIRED, matrixTokens, OWNER, type Route, runMatrix } from "./authorizationMatrix.js"
import { enrol, openSession, PushTestEnv, pushVerifier, simulatedAgent } from "./support.js"
import { EndedText } from "../../src/verifier/http/v3/auth.js"

const A = "aaaaaaaa-0000-4000-8000-000000000001"
const B = "bbbbbbbb-0000-4000-8000-000000000002"
const C = "cccccccc-0000-4000-8000-000000000003"


const doc = { data: { type: "attestation", attributes: {} } }
const adminOnly = { anonymous: [403, ADMIN], admin: "ok", own: [403, ADMIN], other: [403, ADMIN], expired: [401, EXPIRED], ownPlusAdmin: [403, ADMIN], malformed: [401, "Invalid Authorization header format"] } as const
const agentOnly = { anonymous: [403, AGENT], admin: [403, AGENT], own: "ok", other: [403, OWNER], expired: [401, EXPIRED], ownPlusAdmin: "ok", malformed: [401, "Invalid Authorization header format"] } as const
const everyone = { anonymous: "ok", admin: "ok", own: "ok", other: "ok", expired: "ok", ownPlusAdmin: "ok", malformed: "ok" } as const

const routes: ReadonlyArray<Route> = [
  { method: "GET", path: "/v3.0/", expect: everyone },
  { method: "GET", path: `/v3.0/agents/${A}`, expect: { ...adminOnly, own: "ok", ownPlusAdmin: "ok", other: [403, OWNER] } },
  { method: "POST", path: `/v3.0/agents/${A}/attestations`, body: doc, expect: agentOnly },
  { method: "PATCH", path: `/v3.0/agents/${A}/attestations/latest`, body: doc, expect: agentOnly },
  { method: "PATCH", path: `/v3.0/agents/${A}/attestations/0`, body: doc, expect: agentOnly },
  { method: "GET", path: `/v3.0/agents/${A}/attestations`, expect: adminOnly },
  { method: "GET", path: `/v3.0/agents/${A}/attestations/latest`, expect: adminOnly },
  { method: "GET", path: `/v3.0/agents/${A}/attestations/0`, expect: adminOnly },
  // last, the admin last: it ends A's token
  { method: "PUT", path: `/v3.0/agents/${A}/reactivate`, expect: adminOnly }
]

describe("push authorization matrix", () => {
  it.live("every v3 route, every kind of caller", () =>
    Effect.gen(function*() {
      const env = yield* PushTestEnv
      for (const id of [A, B, C]) yield* enrol(id)
      const tokens = yield* matrixTokens({ own: A, other: B, expired: C })
      const own = tokens.own
      yield* runMatrix(routes, callAs(env, tokens), (r) => r.method === "PUT" ? [...callers.filter((c) => c !== "admin"), "admin" as const] : callers)

      // sessions are public: a bad token does not stop POST /sessions
      const s = yield* env.request("POST", "/v3.0/sessions", {
        authorization: "Bearer nonsense",
        body: { data: { type: "session", attributes: { agent_id: A, authentication_supported: [{ authentication_class: "pop", authentication_type: "tpm_pop" }] } } }
      })
      expect(s.status).toEqual(200)
      // an unknown token and a new session replacing the old one
      expect((yield* env.request("GET", `/v3.0/agents/${A}`, { token: "not-a-token" })).json.errors[0].detail).toEqual("Invalid authentication token")
      expect((yield* env.request("GET", `/v3.0/agents/${A}`, { token: own })).json.errors[0].detail).toEqual(EndedText.reactivated)
      const renewed = (yield* openSession(A)).token!
      expect((yield* env.request("GET", `/v3.0/agents/${A}`, { token: renewed })).status).toEqual(200)
      const again = (yield* openSession(A)).token!
      expect((yield* env.request("GET", `/v3.0/agents/${A}`, { token: renewed })).json.errors[0].detail).toEqual(EndedText.replaced)
      expect((yield* env.request("GET", `/v3.0/agents/${A}`, { token: again })).status).toEqual(200)
    }).pipe(Effect.provide(Layer.merge(pushVerifier("sqlite"), simulatedAgent("push-authz")))), 120_000)
})
