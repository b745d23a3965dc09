/**
 * The registrar's stored timestamps come from Clock, not the wall clock (issue 9 §1): under
 * TestClock a registration is stamped with the test time, and an activation an hour later moves
 * `updated_at` by exactly that hour.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, TestClock } from "effect"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { RegistrarRepo } from "../../src/registrar/Repo.js"
import { sqliteLayer } from "./harness.js"

const stamps = (agentId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ registered_at: string; updated_at: string }>`SELECT registered_at, updated_at FROM registrar_agents WHERE agent_id = ${agentId}`
  ).pipe(Effect.map((rows) => rows[0]), Effect.orDie)

describe("registrar repository", () => {
  it.effect("stamps registrations and activations with Clock time", () =>
    Effect.gen(function*() {
      const repo = yield* RegistrarRepo
      const t0 = Date.UTC(2031, 0, 2, 3, 4, 5)
      yield* TestClock.setTime(t0)
      const data = { agent_id: "clock-1", ek_tpm: "AAAA", ekcert: null, aik_tpm: "AAAA", ip: null, port: null, mtls_cert: null, challenge_key: "k" }
      expect(yield* repo.insert(data)).toBe(true)
      expect(yield* stamps("clock-1")).toEqual({ registered_at: "2031-01-02T03:04:05.000Z", updated_at: "2031-01-02T03:04:05.000Z" })
      yield* TestClock.adjust("1 hour")
      expect(yield* repo.activate("clock-1", "k")).toBe(true)
      expect(yield* stamps("clock-1")).toEqual({ registered_at: "2031-01-02T03:04:05.000Z", updated_at: "2031-01-02T04:04:05.000Z" })
    }).pipe(
      Effect.provide(RegistrarRepo.Default.pipe(Layer.provideMerge(sqliteLayer(join(mkdtempSync(join(tmpdir(), "attest-reg-repo-")), "r.sqlite"))))),
      Effect.orDie
    ))
})
