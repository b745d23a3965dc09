/**
 * The registrar's routes on both listeners (HTTP for agents, HTTPS with the admin certificate) on
 * SQLite, fuzzed from its OpenAPI document around a real registration from a simulated TPM: no 5xx,
 * Keylime's envelope, nothing stored after a refusal.
 */
import { afterAll, describe } from "@effect/vitest"
import { Context, Effect, FastCheck as fc, Layer } from "effect"
import * as crypto from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { simulatorManufacturerCa, TpmSimulator } from "../../src/tpm/simulator/TpmSimulator.js"
import { trustStoreOf } from "../../src/pki/chain.js"
import { Tpm } from "../../src/tpm/Tpm.js"
import { agentBody, makeTestPki, removePki, sqliteLayer, TestRegistrar, testRegistrarLayer } from "../registrar/harness.js"
import { fuzzWith } from "./harness.js"
import { checkRequest, type Family, requestArb, routesOf, snapshotRows } from "./routes.js"

const pki = makeTestPki()
afterAll(() => removePki(pki))
const ekTrust = trustStoreOf([new crypto.X509Certificate(simulatorManufacturerCa().pem)], "simulator CA")

/** The registration body of the simulated TPM, once the server is up (the generator reads it lazily). */
let registration: Record<string, unknown> = {}

const registrarServer = Effect.gen(function*() {
  const dir = yield* Effect.acquireRelease(Effect.sync(() => mkdtempSync(join(tmpdir(), "attest-fuzz-reg-"))), (d) => Effect.sync(() => rmSync(d, { recursive: true, force: true })))
  const db = sqliteLayer(join(dir, "registrar.sqlite"))
  const ctx = yield* Layer.build(Layer.mergeAll(testRegistrarLayer({ pki, ekTrustStore: ekTrust, maxBodyBytes: 256 * 1024 }, db), db, TpmSimulator.layer({ seed: "fuzz-registrar" })))
  const reg = Context.get(ctx, TestRegistrar)
  registration = (yield* agentBody(Context.get(ctx, Tpm))).body
  const rows = () => Effect.runPromise(snapshotRows.pipe(Effect.provide(ctx)))
  return {
    http: { url: reg.httpUrl, tls: undefined, rows },
    https: { url: reg.httpsUrl, tls: pki.clients.admin, rows }
  }
})

const DOCUMENTS = new Set(["/version", "/openapi.json"])
const familyOf = (req: { readonly path: string }): Family => (DOCUMENTS.has(req.path.split("?")[0]!) ? "any-json" : "keylime")

describe("fuzz: registrar routes", () => {
  fuzzWith(registrarServer, {
    name: "registrar-routes",
    runs: 150,
    input: fc.tuple(
      fc.boolean(),
      requestArb(routesOf("registrar"), {
        params: { agent_id: ["d432fbb3-d2f1-4a97-9ef7-75bd81c00031", "agent.2_x"] },
        validBodies: {
          "/v{api_version}/agents/{agent_id}": () => ({ ...registration }),
          "/v{api_version}/agents/{agent_id}/activate": () => ({ auth_tag: "00".repeat(48) })
        },
        extraPaths: [...DOCUMENTS, "/"]
      })
    ),
    check: ([secure, req], servers) => checkRequest(secure ? servers.https : servers.http, req, familyOf)
  })
})
