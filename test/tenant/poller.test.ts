/**
 * `attest tenant add --verify` with the verifier's real pull loop (no stand-in): the poller quotes
 * the agent, delivers V, and the tenant's keys/verify check passes; the status then shows
 * attestations counted by the loop.
 */
import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer, Option, Schedule } from "effect"
import * as crypto from "node:crypto"
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { simulatorManufacturerCa } from "../../src/tpm/simulator/TpmSimulator.js"
import { trustStoreOf } from "../../src/pki/chain.js"
import { add } from "../../src/tenant/add.js"
import { verifierStatus } from "../../src/tenant/agentCommands.js"
import type { Connections } from "../../src/tenant/connect.js"
import { VerifierClientTls } from "../../src/verifier/pull/ClientTls.js"
import { PollerLive } from "../../src/verifier/pull/Poller.js"
import type { PollerControl } from "../../src/verifier/domain/PollerControl.js"
import { closeClients, RunningAgent, simulatedAgentLayer } from "../agent/support.js"
import { makeTestPki, removePki, sqliteLayer, TestRegistrar, testRegistrarLayer } from "../registrar/harness.js"
import { testDatabase } from "../support/db.js"
import { startVerifier } from "../verifier/apiHarness.js"
import { captureOutput, tenantConnections } from "./support.js"

const pki = makeTestPki()
const root = mkdtempSync(join(tmpdir(), "attest-tenant-poller-"))
const AGENT = "1a2b3c4d-0000-4000-8000-0000000d0001"

class Tenant extends Context.Tag("test/tenant/poller/Tenant")<Tenant, Connections>() {}

const world = Layer.unwrapScoped(Effect.gen(function*() {
  yield* Effect.addFinalizer(() => Effect.sync(() => (closeClients(), removePki(pki))))
  const ekCaDir = join(root, "tpm_cert_store")
  mkdirSync(ekCaDir)
  writeFileSync(join(ekCaDir, "simulator-ca.pem"), simulatorManufacturerCa().pem)
  const ekTrust = trustStoreOf([new crypto.X509Certificate(simulatorManufacturerCa().pem)], "simulator CA")
  const reg = Context.get(yield* Layer.build(testRegistrarLayer({ pki, ekTrustStore: ekTrust }, sqliteLayer(join(root, "registrar.sqlite")))), TestRegistrar)
  // the verifier's own pull loop, presenting the admin client certificate to agents
  const poller = PollerLive.pipe(Layer.provide(VerifierClientTls.fromPem({ cert: pki.clients.admin.cert!, key: pki.clients.admin.key! })))
  // the harness provides the verifier's config and database to the poller as to the API
  const verifier = yield* startVerifier({ pki, db: yield* testDatabase("sqlite"), poller: poller as unknown as Layer.Layer<PollerControl> })
  const agent = simulatedAgentLayer(
    { agentId: AGENT, dataDir: join(root, "agent"), trustedClientCa: pki.caPem, registrarUrl: reg.httpUrl, retry: { initialDelay: "100 millis", maxDelay: "1 second" } },
    { name: "poller-machine" },
    { seed: "tenant-poller" }
  )
  const c = yield* tenantConnections({ caDir: pki.dir, registrar: reg.httpsUrl, verifier: verifier.url, ekCaDir, options: { retry_interval: 1, verify_timeout: 120 } })
  return Layer.merge(agent, Layer.succeed(Tenant, c))
}))

layer(Layer.orDie(world), { timeout: 300_000, excludeTestServices: true })("attest tenant with the verifier's pull loop", (it) => {
  it.scoped("add --verify: the poller delivers V, K is verified at the agent, attestations are counted", () =>
    Effect.gen(function*() {
      const c = yield* Tenant
      yield* RunningAgent
      const o = captureOutput()
      const none = Option.none<string>()
      yield* add(c, o.out, {
        agentId: AGENT, ip: Option.none(), port: Option.none(), runtimePolicy: none, runtimePolicyName: none, mbRefstate: none,
        mbPolicyName: none, tpmPolicy: none, payload: none, cert: none, include: [], revocationKey: none, verify: true
      })
      expect(o.last().value).toMatchObject({ agent_id: AGENT, added: true, verified: true })
      yield* verifierStatus(c, AGENT).pipe(
        Effect.repeat({ until: (s) => s.attestation_count > 0, schedule: Schedule.spaced("500 millis") }),
        Effect.timeout("120 seconds")
      )
      const counted = yield* verifierStatus(c, AGENT)
      expect(counted.operational_state).toEqual(3)
      expect(counted.last_event_id).toEqual(null)
    }))
})
