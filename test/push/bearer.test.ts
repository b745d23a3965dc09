/**
 * One Bearer rule for API 2.x and 3.0 (issue 22 §9): RFC 6750 §2.1, `"Bearer" 1*SP b64token`, the
 * scheme in any case. The same header is accepted, or refused, by the v2 routes, the v3 routes and
 * the session extension alike.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { parseBearer } from "../../src/http/identity.js"
import { enrol, openSession, PushTestEnv, pushVerifier, simulatedAgent } from "./support.js"

const A = "d432fbb3-d2f1-4a97-9ef7-75bd81c000be"

describe("Bearer header", () => {
  it("parses RFC 6750's credentials and nothing else", () => {
    const token = "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b.Ab-_~+/9="
    const parsed = (h: string) => Option.getOrUndefined(parseBearer(h))
    expect(["Bearer x", "Bearer  x", "bearer x", "BEARER x", ` Bearer ${token} `, "Bearer a.b=="].map(parsed)).toEqual(["x", "x", "x", "x", token, "a.b=="])
    expect(["Bearer", "Bearer ", "Bearer\tx", "Bearerx", "Token x", "Bearer x y", "Bearer x=y", "Bearer é", "Basic eA=="].map(parsed)).toEqual(Array(9).fill(undefined))
  })

  it.live("the v2 routes, the v3 routes and the session extension take the same headers", () =>
    Effect.gen(function*() {
      const env = yield* PushTestEnv
      yield* enrol(A)
      const s = yield* openSession(A)
      const token = s.token!
      const status = (authorization: string) =>
        Effect.all([
          Effect.map(env.request("GET", `/v2.6/agents/${A}`, { authorization }), (r) => r.status),
          Effect.map(env.request("GET", `/v3.0/agents/${A}`, { authorization }), (r) => r.status)
        ])
      // accepted by both: one space or more, the scheme in any case
      expect(yield* Effect.all([status(`Bearer ${token}`), status(`Bearer  ${token}`), status(`bearer ${token}`)])).toEqual([[200, 200], [200, 200], [200, 200]])
      // refused by both (v2 as an unauthenticated caller, 403; v3 as a malformed header, 401)
      expect(yield* Effect.all([status(`Bearer\t${token}`), status(`Bearer ${token} x`), status(`Bearer${token}`)])).toEqual([[403, 401], [403, 401], [403, 401]])
      // the session extension reads the header the same way
      const extend = (authorization: string) =>
        Effect.map(
          env.request("PATCH", `/v3.0/sessions/${s.sessionId}`, { authorization, body: { data: { type: "session", id: s.sessionId, attributes: { agent_id: A } } } }),
          (r) => [r.status, r.json?.errors?.[0]?.detail ?? r.json?.data?.attributes?.evaluation]
        )
      expect(yield* Effect.all([extend(`Bearer  ${token}`), extend(`Bearer\t${token}`)])).toEqual([[200, "pass"], [401, "Invalid Authorization header format"]])
    }).pipe(Effect.provide(Layer.merge(pushVerifier("sqlite"), simulatedAgent("push-bearer")))), 120_000)
})
