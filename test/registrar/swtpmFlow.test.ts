/**
 * The complete registration of an agent backed by swtpm through the Tpm2Tools layer: the EK
 * certificate (issued by swtpm's local CA through an intermediate) chains to a trust store
 * directory, the registrar's blob is activated by the real TPM2_ActivateCredential, the admin
 * reads the record, and deletes it.
 */
import { NodeContext } from "@effect/platform-node"
import { afterAll, describe, expect, layer } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Tpm2Tools } from "../../src/tpm/tpm2tools/Tpm2Tools.js"
import { loadTrustStore } from "../../src/pki/chain.js"
import { Tpm } from "../../src/tpm/Tpm.js"
import { needsSwtpm } from "../support/requirements.js"
import { SwtpmHarness } from "../support/swtpm.js"
import { call, countRows, makeTestPki, removePki, registerAndActivate, sqliteLayer, TestRegistrar, testRegistrarLayer } from "./harness.js"

const ok = needsSwtpm()
const pki = makeTestPki()
afterAll(() => removePki(pki))
const db = sqliteLayer(join(mkdtempSync(join(tmpdir(), "attest-reg-swtpm-")), "registrar.sqlite"))

const Harness = SwtpmHarness.layer({ p256EkCert: false })
const OnSwtpm = Layer.unwrapEffect(Effect.map(SwtpmHarness, (s) => Tpm2Tools.layer({ tcti: s.tcti }))).pipe(
  Layer.provide(NodeContext.layer),
  Layer.provideMerge(Harness)
)
/** swtpm's root and intermediate CA in a trust store directory, as an operator would install them. */
const Registrar = Layer.unwrapEffect(Effect.gen(function*() {
  const swtpm = yield* SwtpmHarness
  const dir = mkdtempSync(join(tmpdir(), "attest-ek-ca-"))
  writeFileSync(join(dir, "swtpm-root.pem"), swtpm.rootCaPem)
  writeFileSync(join(dir, "swtpm-intermediate.pem"), swtpm.issuerCaPem)
  const store = yield* Effect.orDie(loadTrustStore(dir))
  return testRegistrarLayer({ pki, ekTrustStore: store, tpmIdentity: "ek_cert" }, db)
}))
const env = Layer.mergeAll(Registrar, db).pipe(Layer.provideMerge(OnSwtpm))

describe.skipIf(!ok)("registrar with a swtpm-backed agent (Tpm2Tools)", () => {
  layer(env, { timeout: 120_000, excludeTestServices: true })((it) => {
    it.effect("registers with the EK certificate, activates with the TPM, shows the record and deletes it", () =>
      Effect.gen(function*() {
        const reg = yield* TestRegistrar
        const tpm = yield* Tpm
        const id = "swtpm-agent-0001"
        const agent = yield* registerAndActivate(pki, reg, tpm, id)
        const shown = yield* call(pki, reg, { method: "GET", path: `/v2.6/agents/${id}`, port: "https" })
        const b64 = (b: Uint8Array) => Buffer.from(b).toString("base64")
        const ekCert = Option.getOrThrow(Option.fromNullable(agent.ekCert))
        expect(shown.json).toEqual({
          code: 200,
          status: "Success",
          results: {
            agent_id: id,
            // built from the certificate's key with the standard EK template: the TPM's own EK public
            ek_tpm: b64(agent.ekPublic),
            ekcert: b64(ekCert),
            aik_tpm: b64(agent.ak.public),
            ip: "127.0.0.1",
            port: 9002,
            mtls_cert: "disabled",
            regcount: 1
          }
        })
        const deleted = yield* call(pki, reg, { method: "DELETE", path: `/v2.6/agents/${id}`, port: "https" })
        expect(deleted.json).toEqual({ code: 200, status: "Success", results: {} })
        expect(yield* countRows).toBe(0)
      }))
  })
})
