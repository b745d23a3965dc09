/**
 * Every malformed registration or activation gets a 4xx envelope naming the field, and nothing is
 * stored (a wrong auth_tag removes a registration that was never activated, as Keylime does).
 */
import { afterAll, describe, expect, layer } from "@effect/vitest"
import { Effect, Either, Layer } from "effect"
import * as crypto from "node:crypto"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { simulatorManufacturerCa, TpmSimulator } from "../../src/tpm/simulator/TpmSimulator.js"
import { EKU, generateKeyPair, issueCertificate } from "../../src/pki/certificate.js"
import { trustStoreOf } from "../../src/pki/chain.js"
import { TPMA_OBJECT } from "../../src/tpm/constants.js"
import { marshalTpm2bPublic, parseTpm2bPublic } from "../../src/tpm/public.js"
import { Tpm } from "../../src/tpm/Tpm.js"
import { agentBody, call, countRows, makeTestPki, removePki, sqliteLayer, TestRegistrar, testRegistrarLayer } from "./harness.js"

const pki = makeTestPki()
afterAll(() => removePki(pki))
const ekTrust = trustStoreOf([new crypto.X509Certificate(simulatorManufacturerCa().pem)], "simulator CA")
const db = sqliteLayer(join(mkdtempSync(join(tmpdir(), "attest-reg-bad-")), "registrar.sqlite"))
const MAX = 64 * 1024
const env = Layer.mergeAll(
  testRegistrarLayer({ pki, ekTrustStore: ekTrust, maxBodyBytes: MAX }, db),
  db,
  TpmSimulator.layer({ seed: "bad-input-agent" })
)

const b64 = (b: Uint8Array) => Buffer.from(b).toString("base64")
const INVALID = "Could not register agent with invalid data"

/** An EK certificate for the simulator's EK, from a manufacturer CA the registrar does not trust. */
const untrustedEkCert = (ekCertDer: Uint8Array): string => {
  const ca = generateKeyPair("rsa2048")
  const caDer = Either.getOrThrow(issueCertificate({
    subject: { CN: "Rogue TPM Manufacturer CA" },
    publicKey: ca.publicKey,
    signingKey: ca.privateKey,
    notBefore: new Date(Date.now() - 86_400_000),
    notAfter: new Date(Date.now() + 86_400_000),
    basicConstraints: { ca: true },
    keyUsage: ["keyCertSign"]
  }))
  const ekKey = new crypto.X509Certificate(ekCertDer).publicKey
  return b64(Either.getOrThrow(issueCertificate({
    subject: { CN: "rogue EK" },
    publicKey: ekKey,
    issuer: { certificate: caDer, privateKey: ca.privateKey },
    notBefore: new Date(Date.now() - 86_400_000),
    notAfter: new Date(Date.now() + 86_400_000),
    extendedKeyUsage: [EKU.clientAuth]
  })))
}

describe("registrar refuses bad input and stores nothing", () => {
  layer(env, { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect("answers 400 naming the field for every malformed registration field", () =>
      Effect.gen(function*() {
        const reg = yield* TestRegistrar
        const tpm = yield* Tpm
        const good = yield* agentBody(tpm)
        const ak = Either.getOrThrow(parseTpm2bPublic(good.ak.public))
        const { bytes: _bytes, ...akFields } = ak
        const unrestrictedAk = b64(marshalTpm2bPublic({ ...akFields, attributes: ak.attributes & ~TPMA_OBJECT.restricted }))
        const cases: ReadonlyArray<{ readonly name: string; readonly body: unknown; readonly text: string }> = [
          { name: "aik_tpm not base64", body: { ...good.body, aik_tpm: "%%%" }, text: "Invalid request: aik_tpm: is not valid base64" },
          { name: "aik_tpm missing", body: { ...good.body, aik_tpm: undefined }, text: "Invalid request: aik_tpm: is required" },
          { name: "aik_tpm not a TPM2B_PUBLIC", body: { ...good.body, aik_tpm: "AAAA" }, text: `${INVALID}: aik_tpm is not a TPM2B_PUBLIC` },
          { name: "AK not restricted", body: { ...good.body, aik_tpm: unrestrictedAk }, text: `${INVALID}: aik_tpm is not a restricted signing key` },
          { name: "EK as AK", body: { ...good.body, aik_tpm: b64(good.ekPublic) }, text: `${INVALID}: aik_tpm is not a restricted signing key` },
          { name: "ekcert not base64", body: { ...good.body, ekcert: "not base64!" }, text: "Invalid request: ekcert: is not valid base64" },
          { name: "ekcert not a certificate", body: { ...good.body, ekcert: b64(new TextEncoder().encode("not a cert")) }, text: `${INVALID}: ekcert is not a DER X.509 certificate` },
          { name: "ekcert from an untrusted manufacturer", body: { ...good.body, ekcert: untrustedEkCert(good.ekCert!) }, text: `${INVALID}: ekcert does not chain to a trusted TPM manufacturer CA: certificate CN=rogue EK is issued by CN=Rogue TPM Manufacturer CA, which is not in the trust store simulator CA` },
          { name: "ek_tpm not the certificate's key", body: { ...good.body, ek_tpm: good.body.aik_tpm }, text: `${INVALID}: ek_tpm does not hold the public key of ekcert` },
          { name: "no EK at all", body: { ...good.body, ekcert: null }, text: `${INVALID}: ek_tpm is required when no ekcert is given` },
          { name: "mtls_cert not PEM", body: { ...good.body, mtls_cert: "not a pem" }, text: "Invalid request: mtls_cert: must be a PEM certificate or \"disabled\"" },
          { name: "port out of range", body: { ...good.body, port: 70000 }, text: "Invalid request: port: must be a port number 1-65535" },
          { name: "port not a number", body: { ...good.body, port: "http" }, text: "Invalid request: port: must be a port number 1-65535" },
          { name: "ip not an address", body: { ...good.body, ip: "a b" }, text: "Invalid request: ip: is not an IP address or host name" },
          { name: "body not an object", body: [1, 2], text: "Invalid request: the request body must be a JSON object" }
        ]
        for (const [i, c] of cases.entries()) {
          const r = yield* call(pki, reg, { method: "POST", path: `/v2.6/agents/bad-input-${i}`, port: "http", json: c.body })
          expect(r.status, c.name).toBe(400)
          expect((r.json as { status: string }).status.startsWith(c.text), `${c.name}: ${r.body}`).toBe(true)
          expect(r.json, c.name).toMatchObject({ code: 400, results: {} })
        }
        expect(yield* countRows).toBe(0)
      }))

    it.effect("refuses an agent id that is not letters, digits, '-', '_' or '.'", () =>
      Effect.gen(function*() {
        const reg = yield* TestRegistrar
        const good = yield* agentBody(yield* Tpm)
        const r = yield* call(pki, reg, { method: "POST", path: "/v2.6/agents/bad%20id!", port: "http", json: good.body })
        expect(r.status).toBe(400)
        expect((r.json as { status: string }).status).toMatch(/^Invalid request: agent_id: agent id must be/)
        expect(yield* countRows).toBe(0)
      }))

    it.effect("answers malformed JSON, an empty body and an oversized body with envelopes", () =>
      Effect.gen(function*() {
        const reg = yield* TestRegistrar
        const malformed = yield* call(pki, reg, { method: "POST", path: "/v2.6/agents/x1", port: "http", body: "{\"aik_tpm\": " })
        expect(malformed.status).toBe(400)
        expect((malformed.json as { status: string }).status).toMatch(/^Malformed JSON body: /)
        const empty = yield* call(pki, reg, { method: "POST", path: "/v2.6/agents/x1", port: "http", body: "" })
        expect(empty.json).toEqual({ code: 400, status: "Invalid request: the request body must be a JSON object", results: {} })
        const big = yield* call(pki, reg, {
          method: "POST",
          path: "/v2.6/agents/x1",
          port: "http",
          json: { aik_tpm: "A".repeat(MAX * 2) }
        })
        expect(big.json).toEqual({ code: 413, status: `Request body exceeds the limit of ${MAX} bytes`, results: {} })
        expect(yield* countRows).toBe(0)
      }))

    it.effect("deletes a registration that was never activated when the auth_tag does not match", () =>
      Effect.gen(function*() {
        const reg = yield* TestRegistrar
        const good = yield* agentBody(yield* Tpm)
        const id = "wrong-tag-agent"
        const registered = yield* call(pki, reg, { method: "POST", path: `/v2.6/agents/${id}`, port: "http", json: good.body })
        expect(registered.status).toBe(200)
        expect(yield* countRows).toBe(1)
        const r = yield* call(pki, reg, { method: "PUT", path: `/v2.6/agents/${id}/activate`, port: "http", json: { auth_tag: "ab".repeat(48) } })
        expect(r.json).toEqual({
          code: 400,
          status: `Auth tag '${"ab".repeat(48)}' for agent '${id}' does not match expected value. The agent has been deleted from the database and will need to be restarted to reattempt registration`,
          results: {}
        })
        expect(yield* countRows).toBe(0)
        const missing = yield* call(pki, reg, { method: "PUT", path: `/v2.6/agents/${id}/activate`, port: "http", json: {} })
        expect(missing.json).toEqual({ code: 400, status: "Invalid request: auth_tag: is required", results: {} })
      }))

    it.effect("refuses another TPM under a registered id and keeps the first", () =>
      Effect.gen(function*() {
        const reg = yield* TestRegistrar
        const tpm = yield* Tpm
        const first = yield* agentBody(tpm)
        const second = yield* agentBody(tpm)
        const id = "identity-agent"
        expect((yield* call(pki, reg, { method: "POST", path: `/v2.6/agents/${id}`, port: "http", json: first.body })).status).toBe(200)
        const r = yield* call(pki, reg, { method: "POST", path: `/v2.6/agents/${id}`, port: "http", json: second.body })
        expect(r.json).toEqual({
          code: 403,
          status: "Agent re-registration with different TPM identity is forbidden for security reasons",
          results: {}
        })
        const again = yield* call(pki, reg, { method: "POST", path: `/v2.6/agents/${id}`, port: "http", json: first.body })
        expect(again.status).toBe(200)
        expect(yield* countRows).toBe(1)
        yield* call(pki, reg, { method: "DELETE", path: `/v2.6/agents/${id}`, port: "https" })
      }))

    it.effect("answers vactivate with a clear refusal on every version", () =>
      Effect.gen(function*() {
        const reg = yield* TestRegistrar
        for (const v of ["v2.0", "v2.1", "v2.5", "v2.6", "v2"]) {
          const r = yield* call(pki, reg, { method: "PUT", path: `/${v}/agents/a1/vactivate`, port: "http", json: { deepquote: "AAAA" } })
          expect(r.status, v).toBe(400)
          expect((r.json as { status: string }).status, v).toMatch(/^Deep quotes \(vactivate, for TPM 1\.2 virtual TPMs\) are not supported/)
        }
      }))
  })
})
