/**
 * The authorization matrix of spec §5.6 against a running registrar: no client certificate, a
 * certificate from another CA, an expired one, one without the Client Authentication EKU, and a
 * valid admin certificate, each against every registrar operation, with the exact texts.
 */
import { afterAll, describe, expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as crypto from "node:crypto"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { simulatorManufacturerCa, TpmSimulator } from "../../src/tpm/simulator/TpmSimulator.js"
import { HttpApiClient, HttpClient } from "@effect/platform"
import { AgentId } from "../../schemas/Common.js"
import { Forbidden, NotFound } from "../../schemas/Envelope.js"
import { makeHttpsClient, rawRequest } from "../../src/http/client.js"
import { RegistrarApi } from "../../src/registrar/Api.js"
import { trustStoreOf } from "../../src/pki/chain.js"
import { Tpm } from "../../src/tpm/Tpm.js"
import {
  agentBody,
  call,
  makeTestPki,
  removePki,
  registerAndActivate,
  sqliteLayer,
  TestRegistrar,
  testRegistrarLayer,
  type Who
} from "./harness.js"

const pki = makeTestPki()
afterAll(() => removePki(pki))
const ekTrust = trustStoreOf([new crypto.X509Certificate(simulatorManufacturerCa().pem)], "simulator CA")
const db = sqliteLayer(join(mkdtempSync(join(tmpdir(), "attest-reg-authz-")), "registrar.sqlite"))
const env = Layer.mergeAll(testRegistrarLayer({ pki, ekTrustStore: ekTrust }, db), TpmSimulator.layer({ seed: "authz-agent" }))

const ADMIN_REQUIRED = { code: 403, status: "Action requires admin authentication (mTLS certificate)", results: {} }
const NOT_ADMINS: ReadonlyArray<Who> = ["none", "foreign", "expired", "noClientAuth"]

describe("registrar authorization matrix", () => {
  layer(env, { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect("refuses list, show and delete to every caller but a valid admin certificate", () =>
      Effect.gen(function*() {
        const reg = yield* TestRegistrar
        const id = "authz-agent-1"
        yield* registerAndActivate(pki, reg, yield* Tpm, id)
        const ops = [
          { name: "list", method: "GET", path: "/v2.6/agents/" },
          { name: "show", method: "GET", path: `/v2.6/agents/${id}` },
          { name: "delete", method: "DELETE", path: `/v2.6/agents/${id}` }
        ] as const
        for (const who of NOT_ADMINS) {
          for (const op of ops) {
            const r = yield* call(pki, reg, { method: op.method, path: op.path, port: "https", who })
            expect(r.status, `${who} ${op.name}`).toBe(403)
            expect(r.json, `${who} ${op.name}`).toEqual(ADMIN_REQUIRED)
          }
        }
        const list = yield* call(pki, reg, { method: "GET", path: "/v2.6/agents/", port: "https", who: "admin" })
        expect(list.json).toEqual({ code: 200, status: "Success", results: { uuids: [id] } })
        const show = yield* call(pki, reg, { method: "GET", path: `/v2.6/agents/${id}`, port: "https", who: "admin" })
        expect(show.status).toBe(200)
        expect((show.json as { results: { agent_id: string } }).results.agent_id).toBe(id)
        const del = yield* call(pki, reg, { method: "DELETE", path: `/v2.6/agents/${id}`, port: "https", who: "admin" })
        expect(del.json).toEqual({ code: 200, status: "Success", results: {} })
      }))

    it.effect("serves the public operations to anyone, on either port", () =>
      Effect.gen(function*() {
        const reg = yield* TestRegistrar
        const tpm = yield* Tpm
        for (const who of [...NOT_ADMINS, "admin"] as const) {
          const version = yield* call(pki, reg, { method: "GET", path: "/version", port: "https", who })
          expect(version.status, who).toBe(200)
          const agent = yield* agentBody(tpm)
          const registered = yield* call(pki, reg, { method: "POST", path: `/v2.6/agents/pub-${who}`, port: "https", who, json: agent.body })
          expect(registered.status, who).toBe(200)
          const activate = yield* call(pki, reg, { method: "PUT", path: `/v2.6/agents/pub-${who}/activate`, port: "https", who, json: { auth_tag: "00" } })
          expect(activate.status, who).toBe(400) // reached the activation check: wrong tag
        }
        const plain = yield* call(pki, reg, { method: "GET", path: "/version", port: "http" })
        expect(plain.status).toBe(200)
      }))

    it.effect("answers admin operations on the plain HTTP port with 400 saying where they are served", () =>
      Effect.gen(function*() {
        const reg = yield* TestRegistrar
        const cases = [
          ["GET", "/v2.6/agents", "list_registrations"],
          ["GET", "/v2.6/agents/a1", "read_registration"],
          ["DELETE", "/v2.6/agents/a1", "delete_registration"]
        ] as const
        for (const [method, path, action] of cases) {
          const r = yield* call(pki, reg, { method, path, port: "http" })
          expect(r.json).toEqual({
            code: 400,
            status: `Action ${action} is only served on the HTTPS (mTLS) port, not on the plain HTTP port`,
            results: {}
          })
        }
      }))

    it.effect("gives the tenant a typed client over mTLS that decodes the envelope and its errors", () =>
      Effect.gen(function*() {
        const reg = yield* TestRegistrar
        const admin = yield* HttpApiClient.make(RegistrarApi, { baseUrl: `${reg.httpsUrl}/v2.6` }).pipe(
          Effect.provideServiceEffect(HttpClient.HttpClient, makeHttpsClient(pki.clients.admin))
        )
        const list = yield* admin.agents.list()
        expect(Array.isArray(list.uuids)).toBe(true)
        const missing = yield* Effect.flip(admin.agents.show({ path: { agent_id: AgentId.make("no-such-agent") } }))
        expect(missing).toEqual(new NotFound({ message: "Agent with ID 'no-such-agent' not found" }))
        const anonymous = yield* HttpApiClient.make(RegistrarApi, { baseUrl: `${reg.httpsUrl}/v2.6` }).pipe(
          Effect.provideServiceEffect(HttpClient.HttpClient, makeHttpsClient(pki.clients.none))
        )
        const refused = yield* Effect.flip(anonymous.agents.list())
        expect(refused).toEqual(new Forbidden({ message: "Action requires admin authentication (mTLS certificate)" }))
      }).pipe(Effect.scoped))

    it.effect("treats a request with a bearer token as an agent, never as the admin its certificate names", () =>
      Effect.gen(function*() {
        const reg = yield* TestRegistrar
        const r = yield* rawRequest({
          method: "GET",
          baseUrl: reg.httpsUrl,
          path: "/v2.6/agents/",
          headers: { authorization: "Bearer some-token" },
          tls: pki.clients.admin
        }).pipe(Effect.orDie)
        expect(r.status).toBe(403)
        expect(JSON.parse(r.body)).toEqual(ADMIN_REQUIRED)
      }))
  })
})
