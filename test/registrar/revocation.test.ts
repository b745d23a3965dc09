/**
 * Spec §5.3 revocation against a running registrar: an admin certificate revoked with
 * `revokeAdmin` before start is refused on list/show/delete with the §7.3 text, while another
 * admin certificate of the same CA still works.
 */
import { afterAll, describe, expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as crypto from "node:crypto"
import { mkdtempSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { simulatorManufacturerCa, TpmSimulator } from "../../src/tpm/simulator/TpmSimulator.js"
import { type ClientTls, rawRequest } from "../../src/http/client.js"
import { BoundListeners } from "../../src/http/HttpServers.js"
import { issueAdmin } from "../../src/pki/ca.js"
import { trustStoreOf } from "../../src/pki/chain.js"
import { revocationListOf } from "../../src/pki/crl.js"
import { staticRevocations } from "../../src/pki/liveRevocations.js"
import { loadCaCrl, revokeAdmin } from "../../src/pki/revoke.js"
import { RegistrarServerLive } from "../../src/registrar/Server.js"
import { Tpm } from "../../src/tpm/Tpm.js"
import { makeTestPki, registerAndActivate, removePki, sqliteLayer, TestRegistrar, testServerTls } from "./harness.js"

const pki = makeTestPki()
afterAll(() => removePki(pki))
const admin = (name: string): ClientTls => {
  Effect.runSync(Effect.orDie(issueAdmin(pki.dir, name)))
  return { ca: pki.caPem, cert: readFileSync(join(pki.dir, `${name}-cert.crt`), "utf8"), key: readFileSync(join(pki.dir, `${name}-private.pem`), "utf8") }
}
const alice = admin("alice") // leaves
const bob = admin("bob") // stays
const revocations = Effect.runSync(Effect.orDie(Effect.gen(function*() {
  yield* revokeAdmin({ dir: pki.dir, name: "alice" })
  const caDer = new Uint8Array(new crypto.X509Certificate(pki.caPem).raw)
  return revocationListOf([(yield* loadCaCrl(pki.dir, caDer))!], "cacrl.der")
})))

const registrar = Layer.effect(
  TestRegistrar,
  Effect.map(BoundListeners, (b) => ({ httpUrl: b.get("registrar-http")!.url, httpsUrl: b.get("registrar-https")!.url }))
).pipe(
  Layer.provide(RegistrarServerLive({
    host: "127.0.0.1",
    port: 0,
    tlsPort: 0,
    ekTrustStore: trustStoreOf([new crypto.X509Certificate(simulatorManufacturerCa().pem)], "simulator CA"),
    tpmIdentity: "default"
  })),
  Layer.provide(testServerTls(pki, staticRevocations(revocations))),
  Layer.provide(sqliteLayer(join(mkdtempSync(join(tmpdir(), "attest-reg-crl-")), "registrar.sqlite"))),
  Layer.orDie
)
const env = Layer.mergeAll(registrar, TpmSimulator.layer({ seed: "crl-agent" }))

const request = (url: string, tls: ClientTls, method: string, path: string) =>
  rawRequest({ method, baseUrl: url, path, tls }).pipe(
    Effect.map((r) => ({ status: r.status, json: JSON.parse(r.body) as unknown })),
    Effect.orDie
  )

describe("registrar with a CRL of trusted_client_ca", () => {
  layer(env, { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect("refuses a revoked admin on list, show and delete with the spec text; another admin still works", () =>
      Effect.gen(function*() {
        const reg = yield* TestRegistrar
        const id = "crl-agent-1"
        yield* registerAndActivate(pki, reg, yield* Tpm, id)
        const ops = [
          ["GET", "/v2.6/agents/"],
          ["GET", `/v2.6/agents/${id}`],
          ["DELETE", `/v2.6/agents/${id}`]
        ] as const
        for (const [method, path] of ops) {
          const r = yield* request(reg.httpsUrl, alice, method, path)
          expect(r.status, `${method} ${path}`).toBe(403)
          expect(r.json).toEqual({ code: 403, status: "Action requires admin authentication (mTLS certificate)", results: {} })
        }
        const list = yield* request(reg.httpsUrl, bob, "GET", "/v2.6/agents/")
        expect(list.json).toEqual({ code: 200, status: "Success", results: { uuids: [id] } })
        const show = yield* request(reg.httpsUrl, pki.clients.admin, "GET", `/v2.6/agents/${id}`)
        expect(show.status).toBe(200)
        const del = yield* request(reg.httpsUrl, bob, "DELETE", `/v2.6/agents/${id}`)
        expect(del.json).toEqual({ code: 200, status: "Success", results: {} })
      }))
  })
})
