/**
 * Registrations live in the database, not in the process: an agent registered and activated before
 * a registrar restart is still there (record, regcount, activation) after it, on SQLite and on
 * PostgreSQL; so is a pending registration's challenge.
 */
import { SqlClient } from "@effect/sql"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import * as crypto from "node:crypto"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { simulatorManufacturerCa, TpmSimulator } from "../../src/tpm/simulator/TpmSimulator.js"
import { trustStoreOf } from "../../src/pki/chain.js"
import { decodeCredentialFile } from "../../src/tpm/credential.js"
import { Tpm } from "../../src/tpm/Tpm.js"
import { needsPostgres, postgresUrl } from "../support/requirements.js"
import {
  agentBody,
  authTagFor,
  call,
  dropPgSchema,
  makeTestPki,
  removePki,
  pgLayer,
  registerAndActivate,
  sqliteLayer,
  TestRegistrar,
  testRegistrarLayer
} from "./harness.js"

const pki = makeTestPki()
afterAll(() => removePki(pki))
const ekTrust = trustStoreOf([new crypto.X509Certificate(simulatorManufacturerCa().pem)], "simulator CA")

/** Register A (activated) and B (pending) on one registrar, stop it, start another on the same database. */
const survivesRestart = (db: () => Layer.Layer<SqlClient.SqlClient>) =>
  Effect.gen(function*() {
    const tpm = yield* Tpm
    const first = Layer.build(testRegistrarLayer({ pki, ekTrustStore: ekTrust }, db()))
    const pending = yield* Effect.scoped(Effect.gen(function*() {
      const reg = Context.get(yield* first, TestRegistrar)
      const a = yield* registerAndActivate(pki, reg, tpm, "restart-a")
      yield* registerAndActivate(pki, reg, tpm, "restart-a", a) // same identity again: regcount 2
      const b = yield* agentBody(tpm)
      const r = yield* call(pki, reg, { method: "POST", path: "/v2.6/agents/restart-b", port: "http", json: b.body })
      expect(r.status).toBe(200)
      return { ak: b.ak, blob: (r.json as { results: { blob: string } }).results.blob }
    }))
    // a new process: new server, new connections, same database
    yield* Effect.scoped(Effect.gen(function*() {
      const ctx = yield* Layer.build(testRegistrarLayer({ pki, ekTrustStore: ekTrust }, db()))
      const reg = Context.get(ctx, TestRegistrar)
      const shown = yield* call(pki, reg, { method: "GET", path: "/v2.6/agents/restart-a", port: "https" })
      expect(shown.status).toBe(200)
      expect(shown.json).toMatchObject({ results: { agent_id: "restart-a", regcount: 2, mtls_cert: "disabled", port: 9002 } })
      const list = yield* call(pki, reg, { method: "GET", path: "/v2.6/agents", port: "https" })
      expect(list.json).toEqual({ code: 200, status: "Success", results: { uuids: ["restart-a", "restart-b"] } })
      // the pending registration's challenge survived too: activation after the restart works
      const blob = decodeCredentialFile(new Uint8Array(Buffer.from(pending.blob, "base64")))
      if (blob._tag === "Left") throw new Error(blob.left.message)
      const secret = yield* Effect.orDie(tpm.activateCredential(pending.ak, blob.right))
      const activated = yield* call(pki, reg, {
        method: "PUT",
        path: "/v2.6/agents/restart-b/activate",
        port: "http",
        json: { auth_tag: authTagFor(secret, "restart-b") }
      })
      expect(activated.json).toEqual({ code: 200, status: "Success", results: {} })
    }))
  }).pipe(Effect.provide(TpmSimulator.layer({ seed: "restart-agent" })), Effect.orDie)

describe("registrar restart", () => {
  it.live("keeps registrations across a restart on SQLite", () => {
    const file = join(mkdtempSync(join(tmpdir(), "attest-reg-restart-")), "registrar.sqlite")
    return survivesRestart(() => sqliteLayer(file))
  }, 60_000)
})

const pgOk = await needsPostgres()
describe.skipIf(!pgOk)("registrar restart on PostgreSQL", () => {
  it.live("keeps registrations across a restart on PostgreSQL", () => {
    const schema = `attest_reg_restart_${process.pid}`
    return survivesRestart(() => pgLayer(postgresUrl, schema)).pipe(
      Effect.ensuring(dropPgSchema(postgresUrl, schema))
    )
  }, 60_000)
})
