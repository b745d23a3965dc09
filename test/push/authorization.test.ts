/**
 * The authorization matrix of every v3 route over HTTPS (spec §5.2, §7.3; push-model.md §5):
 * anonymous, admin by mTLS, the agent itself, another agent, an expired token, a token plus a valid
 * admin certificate (treated as the agent: never a fallback to mTLS), a malformed header. Exact
 * statuses and texts.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { enrol, openSession, PushTestEnv, pushVerifier, simulatedAgent } from "./support.js"

const A = "aaaaaaaa-0000-4000-8000-000000000001"
const B = "bbbbbbbb-0000-4000-8000-000000000002"
const C = "cccccccc-0000-4000-8000-000000000003"

const ADMIN = "Action requires admin authentication (mTLS certificate)"
const AGENT = "Action requires agent authentication (PoP token)"
const OWNER = "Agent cannot access resource (ownership required)"
const EXPIRED = "Authentication token expired"

type Caller = "anonymous" | "admin" | "own" | "other" | "expired" | "ownPlusAdmin" | "malformed"
const callers: ReadonlyArray<Caller> = ["anonymous", "admin", "own", "other", "expired", "ownPlusAdmin", "malformed"]

interface Route {
  readonly method: string
  readonly path: string
  readonly body?: unknown
  /** Status and detail per caller; "ok" = passes authorization (any status but 401/403). */
  readonly expect: Readonly<Record<Caller, "ok" | readonly [number, string]>>
}

const doc = { data: { type: "attestation", attributes: {} } }
const adminOnly = { anonymous: [403, ADMIN], admin: "ok", own: [403, ADMIN], other: [403, ADMIN], expired: [401, EXPIRED], ownPlusAdmin: [403, ADMIN], malformed: [401, "Invalid Authorization header format"] } as const
const agentOnly = { anonymous: [403, AGENT], admin: [403, AGENT], own: "ok", other: [403, OWNER], expired: [401, EXPIRED], ownPlusAdmin: "ok", malformed: [401, "Invalid Authorization header format"] } as const
const everyone = { anonymous: "ok", admin: "ok", own: "ok", other: "ok", expired: "ok", ownPlusAdmin: "ok", malformed: "ok" } as const

const routes: ReadonlyArray<Route> = [
  { method: "GET", path: "/v3.0/", expect: everyone },
  { method: "GET", path: `/v3.0/agents/${A}`, expect: { ...adminOnly, own: "ok", ownPlusAdmin: "ok", other: [403, OWNER] } },
  { method: "PUT", path: `/v3.0/agents/${A}/reactivate`, expect: adminOnly },
  { method: "POST", path: `/v3.0/agents/${A}/attestations`, body: doc, expect: agentOnly },
  { method: "PATCH", path: `/v3.0/agents/${A}/attestations/latest`, body: doc, expect: agentOnly },
  { method: "PATCH", path: `/v3.0/agents/${A}/attestations/0`, body: doc, expect: agentOnly },
  { method: "GET", path: `/v3.0/agents/${A}/attestations`, expect: adminOnly },
  { method: "GET", path: `/v3.0/agents/${A}/attestations/latest`, expect: adminOnly },
  { method: "GET", path: `/v3.0/agents/${A}/attestations/0`, expect: adminOnly }
]

describe("push authorization matrix", () => {
  it.live("every v3 route, every kind of caller", () =>
    Effect.gen(function*() {
      const env = yield* PushTestEnv
      for (const id of [A, B, C]) yield* enrol(id)
      const own = (yield* openSession(A)).token!
      const other = (yield* openSession(B)).token!
      const expiredSession = yield* openSession(C)
      const sql = yield* SqlClient.SqlClient
      yield* sql`UPDATE push_sessions SET token_expires_at = 0 WHERE session_id = ${expiredSession.sessionId}`

      const call = (r: Route, who: Caller) =>
        env.request(r.method, r.path, {
          ...(r.body === undefined ? {} : { body: r.body }),
          ...(who === "admin" || who === "ownPlusAdmin" ? { admin: true } : {}),
          ...(who === "own" || who === "ownPlusAdmin" ? { token: own } : {}),
          ...(who === "other" ? { token: other } : {}),
          ...(who === "expired" ? { token: expiredSession.token! } : {}),
          ...(who === "malformed" ? { authorization: `Token ${own}` } : {})
        })

      const seen: Array<string> = []
      const wanted: Array<string> = []
      for (const r of routes) {
        for (const who of callers) {
          const reply = yield* call(r, who)
          const want = r.expect[who]
          const line = (status: number, detail: string) => `${r.method} ${r.path} as ${who}: ${status} ${detail}`
          if (want === "ok") {
            wanted.push(`${r.method} ${r.path} as ${who}: authorized`)
            seen.push(reply.status === 401 || reply.status === 403 ? line(reply.status, reply.json?.errors?.[0]?.detail ?? "") : `${r.method} ${r.path} as ${who}: authorized`)
          } else {
            wanted.push(line(want[0], want[1]))
            seen.push(line(reply.status, reply.json?.errors?.[0]?.detail ?? ""))
            // the auth layer's shape: title, no code
            if (reply.status === want[0]) expect(reply.json.errors[0].title).toEqual(want[0] === 401 ? "Unauthorized" : "Forbidden")
          }
        }
      }
      expect(seen).toEqual(wanted)

      // sessions are public: a bad token does not stop POST /sessions
      const s = yield* env.request("POST", "/v3.0/sessions", {
        authorization: "Bearer nonsense",
        body: { data: { type: "session", attributes: { agent_id: A, authentication_supported: [{ authentication_class: "pop", authentication_type: "tpm_pop" }] } } }
      })
      expect(s.status).toEqual(200)
      // an unknown token and a new session replacing the old one
      expect((yield* env.request("GET", `/v3.0/agents/${A}`, { token: "not-a-token" })).json.errors[0].detail).toEqual("Invalid authentication token")
      const renewed = (yield* openSession(A)).token!
      expect((yield* env.request("GET", `/v3.0/agents/${A}`, { token: own })).json.errors[0].detail).toEqual("Invalid authentication token")
      expect((yield* env.request("GET", `/v3.0/agents/${A}`, { token: renewed })).status).toEqual(200)
    }).pipe(Effect.provide(Layer.merge(pushVerifier("sqlite"), simulatedAgent("push-authz")))), 120_000)
})
