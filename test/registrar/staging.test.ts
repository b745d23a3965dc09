/**
 * The public port cannot delete, deactivate or redirect an active agent (issue 8, items 1-2), on
 * SQLite and PostgreSQL: a wrong auth_tag on any activation route leaves the active record as it
 * is (and is logged with the caller's address); a re-registration is staged until its challenge is
 * answered, and only then replaces ip, port and mtls_cert; registrations racing activations end in
 * one consistent record (the last registration wins), never a 500.
 */
import { SqlClient } from "@effect/sql"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect, Either, Layer, Logger } from "effect"
import * as crypto from "node:crypto"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { simulatorManufacturerCa, TpmSimulator } from "../../src/tpm/simulator/TpmSimulator.js"
import { trustStoreOf } from "../../src/pki/chain.js"
import { decodeCredentialFile } from "../../src/tpm/credential.js"
import { type Ak, Tpm } from "../../src/tpm/Tpm.js"
import { needsPostgres, postgresUrl } from "../support/requirements.js"
import {
  agentBody,
  authTagFor,
  call,
  dropPgSchema,
  makeTestPki,
  pgLayer,
  type RegistrarUnderTest,
  registerAndActivate,
  removePki,
  sqliteLayer,
  TestRegistrar,
  testRegistrarLayer
} from "./harness.js"

const pki = makeTestPki()
afterAll(() => removePki(pki))
const ekTrust = trustStoreOf([new crypto.X509Certificate(simulatorManufacturerCa().pem)], "simulator CA")
const pgOk = await needsPostgres()

/** Log lines of the registrar under test. */
const logged: Array<string> = []
const captureLogs = Logger.replace(
  Logger.defaultLogger,
  Logger.make(({ message }) => void logged.push(Array.isArray(message) ? message.map(String).join(" ") : String(message)))
)

const show = (reg: RegistrarUnderTest, id: string) =>
  Effect.map(call(pki, reg, { method: "GET", path: `/v2.6/agents/${id}`, port: "https" }), (r) => r.json as {
    code: number
    results: { ip: string; port: number; mtls_cert: string; regcount: number }
  })

const register = (reg: RegistrarUnderTest, id: string, body: unknown) =>
  Effect.map(call(pki, reg, { method: "POST", path: `/v2.6/agents/${id}`, port: "http", json: body }), (r) => {
    expect(r.status, r.body).toBe(200)
    return (r.json as { results: { blob: string } }).results.blob
  })

const tagFor = (ak: Ak, blob: string, id: string) =>
  Effect.gen(function*() {
    const tpm = yield* Tpm
    const file = decodeCredentialFile(new Uint8Array(Buffer.from(blob, "base64")))
    if (Either.isLeft(file)) return yield* Effect.dieMessage(file.left.message)
    return authTagFor(yield* Effect.orDie(tpm.activateCredential(ak, file.right)), id)
  })

const activate = (reg: RegistrarUnderTest, id: string, authTag: string, route: "put" | "post" | "legacy" = "put", port: "http" | "https" = "http") =>
  call(pki, reg, {
    method: route === "post" ? "POST" : "PUT",
    path: route === "legacy" ? `/v2.6/agents/${id}` : `/v2.6/agents/${id}/activate`,
    port,
    who: "none",
    json: { auth_tag: authTag }
  })

/** Any PEM certificate other than the registered "disabled". */
const otherMtls = pki.serverCert

const suite = (db: () => Layer.Layer<SqlClient.SqlClient>) => {
  const env = Layer.mergeAll(
    testRegistrarLayer({ pki, ekTrustStore: ekTrust }, db()).pipe(Layer.provide(captureLogs)),
    TpmSimulator.layer({ seed: `staging-${Math.random()}` })
  )
  const run = <A, E>(effect: Effect.Effect<A, E, TestRegistrar | Tpm>) => Effect.scoped(Effect.flatMap(Layer.build(env), (ctx) => Effect.provide(effect, ctx))).pipe(Effect.orDie)

  it.live("refuses a wrong auth_tag on every activation route of an active agent, on both listeners, and changes nothing", () =>
    run(Effect.gen(function*() {
      const reg = yield* TestRegistrar
      const id = "active-wrong-tag"
      yield* registerAndActivate(pki, reg, yield* Tpm, id)
      const before = yield* show(reg, id)
      expect(before.code).toBe(200)
      for (const [route, port] of [["put", "http"], ["post", "http"], ["legacy", "http"], ["put", "https"], ["legacy", "https"]] as const) {
        const r = yield* activate(reg, id, "ab".repeat(48), route, port)
        expect(r.json, `${route} on ${port}`).toEqual({
          code: 400,
          status: `Auth tag '${"ab".repeat(48)}' for agent '${id}' does not match expected value. The agent's active registration is unchanged`,
          results: {}
        })
        expect(yield* show(reg, id), `${route} on ${port}`).toEqual(before)
      }
      const warning = logged.find((l) => l.includes(`Agent ${id}: activation with a wrong auth_tag from `))
      expect(warning).toMatch(/from (::ffff:)?127\.0\.0\.1 refused/)
    })))

  it.live("stages a re-registration of an active agent until its challenge is answered", () =>
    run(Effect.gen(function*() {
      const reg = yield* TestRegistrar
      const tpm = yield* Tpm
      const id = "staged-agent"
      const agent = yield* registerAndActivate(pki, reg, tpm, id)
      const active = yield* show(reg, id)
      expect(active.results).toMatchObject({ ip: "127.0.0.1", port: 9002, mtls_cert: "disabled", regcount: 1 })

      // someone re-posts the agent's public EK and AK with their own address: nothing visible changes
      const redirect = { ...agent.body, ip: "10.6.6.6", port: 6666, mtls_cert: otherMtls }
      const blob = yield* register(reg, id, redirect)
      expect(yield* show(reg, id)).toEqual(active)
      // a wrong tag (anyone's guess) changes nothing, and does not cancel the staged registration
      const wrong = yield* activate(reg, id, "cd".repeat(48))
      expect((wrong.json as { status: string }).status).toBe(
        `Auth tag '${"cd".repeat(48)}' for agent '${id}' does not match expected value. The agent's active registration is unchanged`
      )
      expect(yield* show(reg, id)).toEqual(active)

      // the agent itself (holding the TPM) re-registers and answers: now the record moves, and the
      // earlier staged registration can no longer be activated
      const moved = { ...agent.body, ip: "192.0.2.7", port: 9443, mtls_cert: otherMtls }
      const blob2 = yield* register(reg, id, moved)
      expect(yield* show(reg, id)).toEqual(active)
      const ok = yield* activate(reg, id, yield* tagFor(agent.ak, blob2, id), "post")
      expect(ok.json).toEqual({ code: 200, status: "Success", results: {} })
      expect((yield* activate(reg, id, yield* tagFor(agent.ak, blob, id))).status).toBe(400)
      expect((yield* show(reg, id)).results).toMatchObject({ ip: "192.0.2.7", port: 9443, mtls_cert: otherMtls, regcount: 2 })
      // a different TPM under the id is still refused, and still changes nothing
      const other = yield* agentBody(tpm)
      const forbidden = yield* call(pki, reg, { method: "POST", path: `/v2.6/agents/${id}`, port: "http", json: { ...other.body, ekcert: undefined, ek_tpm: Buffer.from(crypto.randomBytes(8)).toString("base64") } })
      expect(forbidden.status).toBe(400)
      const otherAk = yield* call(pki, reg, { method: "POST", path: `/v2.6/agents/${id}`, port: "http", json: { ...agent.body, aik_tpm: other.body.aik_tpm } })
      expect(otherAk.json).toEqual({ code: 403, status: "Agent re-registration with different TPM identity is forbidden for security reasons", results: {} })
      expect((yield* show(reg, id)).results).toMatchObject({ ip: "192.0.2.7", port: 9443, regcount: 2 })
    })))

  it.live("keeps one consistent record when re-registrations race activations", () =>
    run(Effect.gen(function*() {
      const reg = yield* TestRegistrar
      const id = "racing-agent"
      const agent = yield* registerAndActivate(pki, reg, yield* Tpm, id)
      const rounds = Array.from({ length: 8 }, (_, i) => i + 1)
      const outcomes = yield* Effect.forEach(rounds, (i) =>
        Effect.gen(function*() {
          const blob = yield* register(reg, id, { ...agent.body, ip: `192.0.2.${i}`, port: 9000 + i })
          const r = yield* activate(reg, id, yield* tagFor(agent.ak, blob, id))
          return { i, status: r.status, text: (r.json as { status: string }).status }
        }), { concurrency: "unbounded" })
      for (const o of outcomes) expect([200, 400], o.text).toContain(o.status)
      const won = outcomes.filter((o) => o.status === 200).map((o) => o.i)
      expect(won.length).toBeGreaterThan(0)
      for (const o of outcomes.filter((o) => o.status === 400)) {
        expect(o.text).toMatch(/does not match expected value\. The agent's active registration is unchanged$|registered again during activation/)
      }
      const final = (yield* show(reg, id)).results
      // ip and port come from the same registration, one whose activation succeeded
      expect(final.port - 9000).toBeGreaterThan(0)
      expect(final.ip).toBe(`192.0.2.${final.port - 9000}`)
      expect(won).toContain(final.port - 9000)
      expect(final.regcount).toBe(1 + won.length)
    })))
}

describe("staged re-registration on SQLite", () => {
  const file = join(mkdtempSync(join(tmpdir(), "attest-reg-staging-")), "registrar.sqlite")
  suite(() => sqliteLayer(file))
})

describe.skipIf(!pgOk)("staged re-registration on PostgreSQL", () => {
  const schema = `attest_reg_staging_${process.pid}`
  afterAll(() => Effect.runPromise(dropPgSchema(postgresUrl, schema)))
  suite(() => pgLayer(postgresUrl, schema))
})

