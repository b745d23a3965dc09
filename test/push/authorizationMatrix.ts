/**
 * The v3 authorization matrix both suites run (push routes, administration routes): the callers
 * (anonymous, admin by mTLS, the agent itself, another agent, an expired token, a token plus an
 * admin certificate, a malformed header), the texts of spec §7.3, and one pass over the routes
 * that gives the lines seen and the lines wanted, so a failure names each route and caller.
 */
import { SqlClient } from "@effect/sql"
import { expect } from "@effect/vitest"
import { Effect } from "effect"
import { openSession, type PushEnv } from "./support.js"

export const ADMIN = "Action requires admin authentication (mTLS certificate)"
export const AGENT = "Action requires agent authentication (PoP token)"
export const OWNER = "Agent cannot access resource (ownership required)"
export const EXPIRED = "Authentication token expired"
export const FORMAT = "Invalid Authorization header format"

export type Caller = "anonymous" | "admin" | "own" | "other" | "expired" | "ownPlusAdmin" | "malformed"
export const callers: ReadonlyArray<Caller> = ["anonymous", "admin", "own", "other", "expired", "ownPlusAdmin", "malformed"]

export interface Route {
  readonly method: string
  readonly path: string
  readonly body?: unknown
  /** Status and detail per caller; "ok" = passes authorization (any status but 401/403). */
  readonly expect: Readonly<Record<Caller, "ok" | readonly [number, string]>>
}

/** Tokens for `own` (agent `own`), `other` and an expired one (agent `expired`, its token expired in the database). */
export const matrixTokens = (agents: { readonly own: string; readonly other: string; readonly expired: string }) =>
  Effect.gen(function*() {
    const own = (yield* openSession(agents.own)).token!
    const other = (yield* openSession(agents.other)).token!
    const expiredSession = yield* openSession(agents.expired)
    const sql = yield* SqlClient.SqlClient
    yield* sql`UPDATE push_sessions SET token_expires_at = 0 WHERE session_id = ${expiredSession.sessionId}`
    return { own, other, expired: expiredSession.token! }
  })

/** One request of a route as a caller. */
export const callAs = (env: PushEnv, tokens: { readonly own: string; readonly other: string; readonly expired: string }) => (r: Route, who: Caller) =>
  env.request(r.method, r.path, {
    ...(r.body === undefined ? {} : { body: r.body }),
    ...(r.body !== undefined && r.path.includes("/verify/") ? { contentType: "application/json" } : {}),
    ...(who === "admin" || who === "ownPlusAdmin" ? { admin: true } : {}),
    ...(who === "own" || who === "ownPlusAdmin" ? { token: tokens.own } : {}),
    ...(who === "other" ? { token: tokens.other } : {}),
    ...(who === "expired" ? { token: tokens.expired } : {}),
    ...(who === "malformed" ? { authorization: `Token ${tokens.own}` } : {})
  })

/**
 * Every route as every caller (in `order(route)`), checked against its expectation; a refusal is
 * also checked for the auth layer's error shape. Ends with one comparison of all the lines.
 */
export const runMatrix = (
  routes: ReadonlyArray<Route>,
  call: ReturnType<typeof callAs>,
  order: (r: Route) => ReadonlyArray<Caller> = () => callers
) =>
  Effect.gen(function*() {
    const seen: Array<string> = []
    const wanted: Array<string> = []
    for (const r of routes) {
      for (const who of order(r)) {
        const reply = yield* call(r, who)
        const want = r.expect[who]
        const line = (status: number, detail: string) => `${r.method} ${r.path} as ${who}: ${status} ${detail}`
        const authorized = `${r.method} ${r.path} as ${who}: authorized`
        if (want === "ok") {
          wanted.push(authorized)
          seen.push(reply.status === 401 || reply.status === 403 ? line(reply.status, reply.json?.errors?.[0]?.detail ?? "") : authorized)
        } else {
          wanted.push(line(want[0], want[1]))
          seen.push(line(reply.status, reply.json?.errors?.[0]?.detail ?? ""))
          // the auth layer's shape: status, title, detail and no code
          if (reply.status === want[0]) {
            expect(reply.json.errors[0]).toEqual({ status: String(want[0]), title: want[0] === 401 ? "Unauthorized" : "Forbidden", detail: want[1] })
          }
        }
      }
    }
    expect(seen).toEqual(wanted)
  })
