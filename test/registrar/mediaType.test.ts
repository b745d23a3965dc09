/**
 * Every request body gets an answer whatever its Content-Type (issue 22 §5: a POST or PUT with
 * `application/vnd.api+json` was never answered, on both listeners, holding its connection).
 * Keylime's controllers read any `application/…+json` body as JSON, so a registration sent as
 * `application/vnd.api+json` registers; a media type the registrar does not take is a 415 envelope
 * naming it, and nothing is stored.
 */
import { afterAll, describe, expect, layer } from "@effect/vitest"
import { Duration, Effect, Either, Layer } from "effect"
import * as crypto from "node:crypto"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { simulatorManufacturerCa, TpmSimulator } from "../../src/tpm/simulator/TpmSimulator.js"
import { trustStoreOf } from "../../src/pki/chain.js"
import { rawRequest } from "../../src/http/client.js"
import { decodeCredentialFile } from "../../src/tpm/credential.js"
import { Tpm } from "../../src/tpm/Tpm.js"
import { agentBody, authTagFor, type Call, call, countRows, makeTestPki, removePki, sqliteLayer, TestRegistrar, testRegistrarLayer } from "./harness.js"

const pki = makeTestPki()
afterAll(() => removePki(pki))
const ekTrust = trustStoreOf([new crypto.X509Certificate(simulatorManufacturerCa().pem)], "simulator CA")
const db = sqliteLayer(join(mkdtempSync(join(tmpdir(), "attest-reg-media-")), "registrar.sqlite"))
const env = Layer.mergeAll(testRegistrarLayer({ pki, ekTrustStore: ekTrust }, db), db, TpmSimulator.layer({ seed: "media-type-agent" }))

/** Generous on a loaded machine; before the fix these requests were never answered at all. */
const ANSWER_WITHIN = Duration.seconds(20)

/** The request, or a failure saying it was not answered within the bound. */
const answered = (c: Call) =>
  Effect.flatMap(TestRegistrar, (reg) => call(pki, reg, c)).pipe(
    Effect.timeoutFail({
      duration: ANSWER_WITHIN,
      onTimeout: () => new Error(`${c.method} ${c.path} on registrar-${c.port} (${c.contentType}) not answered within ${Duration.format(ANSWER_WITHIN)}`)
    }),
    Effect.orDie
  )

describe("registrar answers every request body's media type", () => {
  layer(env, { timeout: 120_000, excludeTestServices: true })((it) => {
    it.effect("registers and activates an agent whose requests say application/vnd.api+json (read as JSON, as Keylime does)", () =>
      Effect.gen(function*() {
        const tpm = yield* Tpm
        const agent = yield* agentBody(tpm)
        const id = "vnd-json-agent"
        const registered = yield* answered({ method: "POST", path: `/v2.6/agents/${id}`, port: "http", json: agent.body, contentType: "application/vnd.api+json" })
        expect([registered.status, typeof (registered.json as { results?: { blob?: unknown } }).results?.blob]).toEqual([200, "string"])
        const blob = Either.getOrThrow(decodeCredentialFile(new Uint8Array(Buffer.from((registered.json as { results: { blob: string } }).results.blob, "base64"))))
        const secret = yield* Effect.orDie(tpm.activateCredential(agent.ak, blob))
        const activated = yield* answered({
          method: "PUT",
          path: `/v2.6/agents/${id}/activate`,
          port: "http",
          json: { auth_tag: authTagFor(secret, id) },
          contentType: "application/vnd.api+json; charset=utf-8"
        })
        expect(activated.json).toEqual({ code: 200, status: "Success", results: {} })
      }))

    it.effect("answers a vnd.api+json POST and PUT on both listeners within the bound", () =>
      Effect.gen(function*() {
        const statuses: Array<[string, number]> = []
        for (const port of ["http", "https"] as const) {
          for (const method of ["POST", "PUT"] as const) {
            const r = yield* answered({ method, path: `/v2.6/agents/vnd-${port}-${method}`, port, body: "{\"data\":{}}", contentType: "application/vnd.api+json" })
            statuses.push([`${method} registrar-${port}`, r.status])
            expect((r.json as { code: number }).code, `${method} ${port}: ${r.body}`).toBe(r.status)
          }
        }
        // answered as JSON: a document without the registration's fields is a 400 naming the field
        expect(statuses.map(([, s]) => s >= 400 && s < 500)).toEqual([true, true, true, true])
      }))

    it.effect("refuses media types it does not take with a 415 envelope naming the type, on both listeners, and stores nothing", () =>
      Effect.gen(function*() {
        const tpm = yield* Tpm
        const agent = yield* agentBody(tpm)
        const before = yield* countRows
        const body = JSON.stringify(agent.body)
        for (const port of ["http", "https"] as const) {
          for (const type of ["text/plain", "application/octet-stream", "multipart/form-data; boundary=x", "application/x-www-form-urlencoded", "application/xml"]) {
            const media = type.split(";")[0]!
            const r = yield* answered({ method: "POST", path: `/v2.6/agents/media-${port}`, port, body, contentType: type })
            expect([r.status, r.json], `${type} on ${port}`).toEqual([
              415,
              { code: 415, status: `Unsupported Media Type: the request body must be JSON (application/json), not ${media}`, results: {} }
            ])
          }
        }
        expect(yield* countRows).toBe(before)
      }))

    // found by the registrar-routes fuzzer: no body at all, but a Content-Type naming parts
    it.effect("answers a POST or PUT without a body whose Content-Type is multipart or a form, on both listeners, and stores nothing", () =>
      Effect.gen(function*() {
        const reg = yield* TestRegistrar
        const before = yield* countRows
        for (const port of ["http", "https"] as const) {
          for (const [method, path] of [["POST", "/v2.6/agents/no-body"], ["PUT", "/v2.6/agents/no-body/activate"]] as const) {
            for (const type of ["multipart/form-data; boundary=x", "application/x-www-form-urlencoded"]) {
              const r = yield* rawRequest({
                method,
                baseUrl: port === "http" ? reg.httpUrl : reg.httpsUrl,
                path,
                headers: { "content-type": type },
                ...(port === "https" ? { tls: pki.clients.admin } : {})
              }).pipe(
                Effect.timeoutFail({ duration: ANSWER_WITHIN, onTimeout: () => new Error(`${method} ${path} on ${port} (${type}, no body) not answered within ${Duration.format(ANSWER_WITHIN)}`) }),
                Effect.orDie
              )
              expect([r.status, JSON.parse(r.body)], `${method} ${port} ${type}`).toEqual([400, { code: 400, status: "Invalid request: the request body must be a JSON object", results: {} }])
            }
          }
        }
        expect(yield* countRows).toBe(before)
      }))
  })
})
