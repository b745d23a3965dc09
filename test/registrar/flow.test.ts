/**
 * The complete registration of a simulator-backed agent against a running registrar: register
 * (EK certificate from the simulated manufacturer), activate with the TPM's ActivateCredential,
 * admin reads the record over mTLS, delete.
 */
import { afterAll, describe, expect, layer } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import * as crypto from "node:crypto"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { simulatorManufacturerCa, TpmSimulator } from "../../src/tpm/simulator/TpmSimulator.js"
import { trustStoreOf } from "../../src/pki/chain.js"
import { decodeCredentialFile } from "../../src/tpm/credential.js"
import { Tpm } from "../../src/tpm/Tpm.js"
import { call, countRows, makeTestPki, removePki, sqliteLayer, TestRegistrar, testRegistrarLayer } from "./harness.js"

const pki = makeTestPki()
afterAll(() => removePki(pki))
const ekTrust = trustStoreOf([new crypto.X509Certificate(simulatorManufacturerCa().pem)], "simulator CA")
const db = sqliteLayer(join(mkdtempSync(join(tmpdir(), "attest-reg-flow-")), "registrar.sqlite"))
const env = Layer.mergeAll(testRegistrarLayer({ pki, ekTrustStore: ekTrust }, db), db, TpmSimulator.layer({ seed: "flow-agent" }))

const b64 = (b: Uint8Array) => Buffer.from(b).toString("base64")
const authTag = (secret: Uint8Array, id: string) =>
  crypto.createHmac("sha384", Buffer.from(b64(secret), "utf8")).update(id).digest("hex")

describe("registrar with a simulator-backed agent", () => {
  layer(env, { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect("registers, activates with the TPM, shows the record to an admin and deletes it", () =>
      Effect.gen(function*() {
        const reg = yield* TestRegistrar
        const tpm = yield* Tpm
        const id = "3f2a8c1e-0000-4000-8000-00000000a001"
        const ekCert = Option.getOrThrow(yield* tpm.ekCertificate("rsa"))
        const ak = yield* tpm.createAk("rsa", { alg: "rsa", hash: "sha256", scheme: "rsassa" })
        const body = { ekcert: b64(ekCert), aik_tpm: b64(ak.public), mtls_cert: "disabled", ip: "127.0.0.1", port: 9002 }

        const registered = yield* call(pki, reg, { method: "POST", path: `/v2.5/agents/${id}`, port: "http", json: body })
        expect(registered.status).toBe(200)
        const blobB64 = (registered.json as { results: { blob: string } }).results.blob
        const notYet = yield* call(pki, reg, { method: "GET", path: `/v2.5/agents/${id}`, port: "https" })
        expect(notYet.json).toEqual({ code: 404, status: `Agent with ID '${id}' has not been activated`, results: {} })

        const blob = decodeCredentialFile(new Uint8Array(Buffer.from(blobB64, "base64")))
        if (blob._tag === "Left") throw new Error(blob.left.message)
        const secret = yield* tpm.activateCredential(ak, blob.right)
        expect(secret.length).toBe(32)
        const activated = yield* call(pki, reg, {
          method: "PUT",
          path: `/v2.5/agents/${id}/activate`,
          port: "http",
          json: { auth_tag: authTag(secret, id) }
        })
        expect(activated.json).toEqual({ code: 200, status: "Success", results: {} })

        const shown = yield* call(pki, reg, { method: "GET", path: `/v2.5/agents/${id}`, port: "https" })
        const ekPublic = yield* tpm.ekPublic("rsa")
        expect(shown.json).toEqual({
          code: 200,
          status: "Success",
          results: {
            agent_id: id,
            ek_tpm: b64(ekPublic),
            ekcert: b64(ekCert),
            aik_tpm: b64(ak.public),
            ip: "127.0.0.1",
            port: 9002,
            mtls_cert: "disabled",
            regcount: 1
          }
        })
        const listed = yield* call(pki, reg, { method: "GET", path: "/v2.5/agents/", port: "https" })
        expect(listed.json).toEqual({ code: 200, status: "Success", results: { uuids: [id] } })

        const deleted = yield* call(pki, reg, { method: "DELETE", path: `/v2.5/agents/${id}`, port: "https" })
        expect(deleted.json).toEqual({ code: 200, status: "Success", results: {} })
        const gone = yield* call(pki, reg, { method: "GET", path: `/v2.5/agents/${id}`, port: "https" })
        expect(gone.status).toBe(404)
        expect(yield* countRows).toBe(0)
      }))
  })
})
