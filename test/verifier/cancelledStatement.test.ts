/**
 * An agent add whose statement PostgreSQL cancels (57014 "canceling statement due to user
 * request": what a stray cancel of @effect/sql-pg did to adds while a second cluster runner
 * started, and what an operator's pg_cancel_backend does) is answered 503 with Retry-After, not
 * 500, and stores nothing; the log gives PostgreSQL's reason and code; the same add then succeeds. On a real PostgreSQL: the add is held on a
 * lock another connection takes on verifier_agents, and cancelled there.
 */
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Logger } from "effect"
import Pg from "pg"
import { testDatabase } from "../support/db.js"
import { needsPostgres, postgresUrl } from "../support/requirements.js"
import { makeTestPki, removePki, startVerifier, summary, vcall } from "./apiHarness.js"
import { validBody } from "./support.js"

const pki = makeTestPki()
afterAll(() => removePki(pki))
const pgOk = await needsPostgres()
const ID = "d432fbb3-d2f1-4a97-9ef7-75bd81c00057"

/** The verifier's log lines (its fibers are forked while this logger is in place). */
const logged: Array<string> = []
const captureLogs = Logger.replace(
  Logger.defaultLogger,
  Logger.make(({ message }) => void logged.push(Array.isArray(message) ? message.map(String).join(" ") : String(message)))
)

describe.skipIf(!pgOk)("verifier when PostgreSQL cancels a statement of an add", () => {
  it.scopedLive("answers 503 with Retry-After, stores nothing, and the add succeeds afterwards", () =>
    Effect.gen(function*() {
      const db = yield* testDatabase("pg")
      const schema = new URL(db.database_url).searchParams.get("options")!.replace("-c search_path=", "")
      const v = yield* startVerifier({ pki, db }).pipe(Effect.provide(captureLogs))
      const add = vcall(pki, v, { method: "POST", path: `/v2.6/agents/${ID}`, json: validBody() })
      const locker = yield* Effect.acquireRelease(
        Effect.promise(async () => {
          const c = new Pg.Client({ connectionString: postgresUrl })
          await c.connect()
          return c
        }),
        (c) => Effect.promise(() => c.end())
      )
      const q = (text: string) => Effect.promise(() => locker.query(text))
      yield* q("BEGIN")
      yield* q(`LOCK TABLE ${schema}.verifier_agents IN ACCESS EXCLUSIVE MODE`)
      const pending = yield* Effect.fork(add)
      // the add's statement waits on the lock: cancel what waits on it (as pg_cancel_backend does) until the add is answered
      yield* Effect.promise(() =>
        locker.query<{ n: string }>(
          `SELECT COUNT(pg_cancel_backend(pid)) AS n FROM pg_stat_activity WHERE pg_backend_pid() = ANY(pg_blocking_pids(pid))`
        )
      ).pipe(
        Effect.map((r) => Number(r.rows[0]!.n)),
        Effect.zipLeft(Effect.sleep("50 millis")),
        Effect.repeat({ until: () => pending.unsafePoll() !== null }),
        Effect.timeout("60 seconds")
      )
      const refused = yield* Fiber.join(pending)
      yield* q("ROLLBACK")
      expect([refused.status, refused.headers["retry-after"], summary(refused).text]).toEqual([
        503,
        "2",
        "The verifier database is unavailable at the moment; retry later"
      ])
      // the log says what PostgreSQL said, with its code
      expect(logged.filter((l) => l.startsWith("answered 503")).map((l) => l.replace(/: verifier database: .* failed: /, ": … failed: "))).toEqual([
        "answered 503 (the database is momentarily unavailable): … failed: Failed to execute statement: canceling statement due to user request (57014)"
      ])
      // nothing stored: the agent is unknown, and the add succeeds
      expect((yield* vcall(pki, v, { method: "GET", path: `/v2.6/agents/${ID}` })).status).toBe(404)
      expect((yield* add).status).toBe(200)
    }), { timeout: 120_000 })
})
