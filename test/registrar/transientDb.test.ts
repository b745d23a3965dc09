/**
 * PostgreSQL going away under a running registrar (issue 8, item 8), against a real PostgreSQL:
 * a pooled connection dying under a request is retried once on a new connection (the request
 * succeeds), a database that stays unreachable is answered 503 with Retry-After (never 500), and
 * the registrar serves again as soon as the database is back. The classifier is checked on the
 * real error of an in-flight query ended with pg_terminate_backend (SQLSTATE 57P01).
 */
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Context, Effect, Exit, Fiber, Layer, Redacted } from "effect"
import * as crypto from "node:crypto"
import { simulatorManufacturerCa, TpmSimulator } from "../../src/tpm/simulator/TpmSimulator.js"
import { isTransientSqlError } from "../../src/db/transient.js"
import { trustStoreOf } from "../../src/pki/chain.js"
import { Tpm } from "../../src/tpm/Tpm.js"
import { needsPostgres, postgresUrl } from "../support/requirements.js"
import { startTcpProxy } from "../support/tcpProxy.js"
import { agentBody, call, dropPgSchema, makeTestPki, pgLayer, registerAndActivate, removePki, TestRegistrar, testRegistrarLayer } from "./harness.js"

const pki = makeTestPki()
afterAll(() => removePki(pki))
const ekTrust = trustStoreOf([new crypto.X509Certificate(simulatorManufacturerCa().pem)], "simulator CA")
const pgOk = await needsPostgres()

describe.skipIf(!pgOk)("registrar when PostgreSQL goes away", () => {
  const schema = `attest_reg_transient_${process.pid}`
  afterAll(() => Effect.runPromise(dropPgSchema(postgresUrl, schema)))

  it.live("retries a request whose connection died once, answers 503 with Retry-After while the database is down, and recovers", () =>
    Effect.gen(function*() {
      const target = new URL(postgresUrl)
      const proxy = yield* Effect.acquireRelease(
        Effect.promise(() => startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) })),
        (p) => Effect.promise(() => p.close())
      )
      const viaProxy = new URL(postgresUrl)
      viaProxy.port = String(proxy.port)
      const ctx = yield* Layer.build(Layer.mergeAll(
        testRegistrarLayer({ pki, ekTrustStore: ekTrust }, pgLayer(viaProxy.toString(), schema)),
        TpmSimulator.layer({ seed: "transient-agent" })
      ))
      const reg = Context.get(ctx, TestRegistrar)
      const tpm = Context.get(ctx, Tpm)
      yield* registerAndActivate(pki, reg, tpm, "transient-a")
      const show = call(pki, reg, { method: "GET", path: "/v2.6/agents/transient-a", port: "https" })
      expect((yield* show).status).toBe(200)

      // the pooled connection dies under the next statement: one retry on a new connection
      proxy.failNextWrite()
      const afterCut = yield* show
      expect([afterCut.status, (afterCut.json as { results: { agent_id: string } }).results.agent_id]).toEqual([200, "transient-a"])
      proxy.failNextWrite()
      const b = yield* agentBody(tpm)
      const registered = yield* call(pki, reg, { method: "POST", path: "/v2.6/agents/transient-b", port: "http", json: b.body })
      expect(registered.status).toBe(200)

      // down: every request is a 503 envelope with Retry-After, on both listeners
      proxy.refuse()
      const down = [
        yield* show,
        yield* call(pki, reg, { method: "GET", path: "/v2.6/agents", port: "https" }),
        yield* call(pki, reg, { method: "POST", path: "/v2.6/agents/transient-c", port: "http", json: b.body }),
        yield* call(pki, reg, { method: "PUT", path: "/v2.6/agents/transient-a/activate", port: "http", json: { auth_tag: "00" } })
      ]
      for (const r of down) {
        expect([r.status, r.headers["retry-after"], r.json]).toEqual([503, "2", {
          code: 503,
          status: "The registrar database is unavailable at the moment; retry later",
          results: {}
        }])
      }

      // back: served again, nothing lost
      proxy.accept()
      expect((yield* show).status).toBe(200)
      const list = yield* call(pki, reg, { method: "GET", path: "/v2.6/agents", port: "https" })
      expect(list.json).toEqual({ code: 200, status: "Success", results: { uuids: ["transient-a", "transient-b"] } })
    }).pipe(Effect.scoped), 120_000)

  it.live("classifies the error of a query ended by pg_terminate_backend (admin shutdown) as transient", () =>
    Effect.gen(function*() {
      const name = `attest-transient-${process.pid}`
      const client = (applicationName: string) =>
        Layer.build(PgClient.layer({ url: Redacted.make(postgresUrl), applicationName, maxConnections: 1 })).pipe(
          Effect.map(Context.get(SqlClient.SqlClient)),
          Effect.orDie
        )
      const sql = yield* client(name)
      const admin = yield* client(`${name}-admin`)
      const sleeping = yield* Effect.fork(sql`SELECT pg_sleep(30)`)
      // wait until the query runs, then end its backend from another connection
      yield* Effect.repeat(
        admin`SELECT pid FROM pg_stat_activity WHERE application_name = ${name} AND query LIKE 'SELECT pg_sleep%'`,
        { until: (rows) => rows.length > 0 }
      ).pipe(
        Effect.zipRight(admin`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = ${name}`),
        Effect.orDie
      )
      const exit = yield* Fiber.await(sleeping)
      expect(Exit.isFailure(exit)).toBe(true)
      if (Exit.isFailure(exit)) {
        const error = exit.cause._tag === "Fail" ? exit.cause.error : undefined
        expect(error?._tag).toBe("SqlError")
        expect(isTransientSqlError(error)).toBe(true)
      }
      // and a plain SQL error is not (asked on the other connection: the first one died with its backend)
      const bad = yield* Effect.flip(admin`SELECT * FROM no_such_table_${admin.literal(String(process.pid))}`)
      expect(isTransientSqlError(bad), String((bad as { cause?: unknown }).cause)).toBe(false)
    }).pipe(Effect.scoped), 60_000)
})
