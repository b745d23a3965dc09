/**
 * PostgreSQL going away under a running verifier, against a real PostgreSQL behind a TCP proxy:
 * a read whose pooled connection dies is tried once more and succeeds; while the database is unreachable every request that needs it is answered 503 with Retry-After
 * and the verifier's text (never 500), the public checks that need no database still answer, and
 * the verifier serves again, nothing lost, as soon as the database is back.
 */
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect, Schedule } from "effect"
import { testDatabase, throughRelay } from "../support/db.js"
import { needsPostgres, postgresUrl } from "../support/requirements.js"
import { startTcpProxy } from "../support/tcpProxy.js"
import { makeTestPki, removePki, startVerifier, summary, vcall } from "./apiHarness.js"
import { record, validBody } from "./support.js"

const pki = makeTestPki()
afterAll(() => removePki(pki))
const pgOk = await needsPostgres()
const ID = "d432fbb3-d2f1-4a97-9ef7-75bd81c00011"

describe.skipIf(!pgOk)("verifier when PostgreSQL goes away", () => {
  it.scopedLive("answers 503 with Retry-After while the database is down, and recovers", () =>
    Effect.gen(function*() {
      const db = yield* testDatabase("pg")
      const target = new URL(postgresUrl)
      const proxy = yield* Effect.acquireRelease(
        Effect.promise(() => startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) })),
        (p) => Effect.promise(() => p.close())
      )
      const v = yield* startVerifier({ pki, db: throughRelay(db, proxy.port) })
      const call = (method: string, path: string, json?: unknown) => vcall(pki, v, { method, path, ...(json === undefined ? {} : { json }) })
      expect((yield* call("POST", `/v2.6/agents/${ID}`, validBody())).status).toBe(200)

      // the pooled connection dies under a read: tried once more on a new connection
      proxy.failNextWrite()
      const afterCut = yield* call("GET", `/v2.6/agents/${ID}`)
      expect([afterCut.status, summary(afterCut).text]).toEqual([200, "Success"])

      proxy.refuse()
      for (const [method, path, json] of [
        ["GET", `/v2.6/agents/${ID}`, undefined],
        ["GET", "/v2.6/agents/", undefined],
        ["POST", "/v2.6/mbpolicies/mb1", { mb_policy: "{}" }],
        ["PUT", `/v2.6/agents/${ID}/stop`, undefined]
      ] as const) {
        const r = yield* call(method, path, json)
        expect([`${method} ${path}`, r.status, r.headers["retry-after"], summary(r).text]).toEqual([
          `${method} ${path}`,
          503,
          "2",
          "The verifier database is unavailable at the moment; retry later"
        ])
      }
      // verify/evidence needs no database
      const evidence = yield* call("POST", "/v2.6/verify/evidence", record("ver-evidence-ok-runtime-policy").request.body)
      expect(summary(evidence).results).toMatchObject({ valid: true })

      proxy.accept()
      const back = yield* Effect.retry(
        Effect.filterOrFail(call("GET", "/v2.6/agents/"), (r) => r.status === 200, (r) => r.status),
        { times: 240, schedule: Schedule.spaced("250 millis") }
      )
      expect(summary(back).results).toEqual({ uuids: [[ID]] })
      expect((yield* call("GET", `/v2.6/agents/${ID}`)).json).toMatchObject({ results: { operational_state: 1 } })
    }), 120_000)
})
