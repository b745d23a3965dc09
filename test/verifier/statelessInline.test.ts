/**
 * verify/evidence bodies up to `verify_inline_max_body_size` are judged on the server's thread,
 * larger ones by a worker: the answers are the same bytes either way, for a valid request, a failing
 * one and a malformed one (the captured Keylime exchanges), over HTTPS.
 */
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { testDatabase } from "../support/db.js"
import { makeTestPki, removePki, startVerifier, vcall } from "./apiHarness.js"
import { record } from "./support.js"

const pki = makeTestPki()
afterAll(() => removePki(pki))
const requests = ["ver-evidence-ok-runtime-policy", "ver-evidence-policy-fail", "ver-evidence-malformed"] as const

describe("verify/evidence judged here or in a worker", () => {
  it.scopedLive("gives the same answer for the same body", () =>
    Effect.gen(function*() {
      const answersOf = (inline: number) =>
        Effect.gen(function*() {
          const v = yield* startVerifier({ pki, db: yield* testDatabase("sqlite"), config: { verify_inline_max_body_size: inline } })
          return yield* Effect.forEach(requests, (name) =>
            Effect.map(vcall(pki, v, { method: "POST", path: "/v2.6/verify/evidence", body: rawBody(name) }), (r) => ({ name, status: r.status, body: r.body })))
        }).pipe(Effect.scoped)
      const here = yield* answersOf(1 << 20)
      const worker = yield* answersOf(0)
      expect(here.map((a) => [a.name, a.status])).toEqual([["ver-evidence-ok-runtime-policy", 200], ["ver-evidence-policy-fail", 200], ["ver-evidence-malformed", 400]])
      expect(worker).toEqual(here)
    }), 120_000)
})

const rawBody = (name: string): string => {
  const body = record(name).request.body
  return typeof body === "string" ? body : JSON.stringify(body)
}
