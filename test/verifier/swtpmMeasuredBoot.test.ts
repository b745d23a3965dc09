/**
 * An agent on swtpm (tpm2-tools layer) attested by the verifier's real pull loop with a measured-boot
 * policy: enrolled through the tenant's add with a runtime policy from its IMA list and a reference
 * state from its boot log (as `attest up` does), judged by the `example` policy on every quote.
 * Quotes from swtpm keep passing (state 3, attestations counted); the machine then runs an unlisted
 * executable and the loop stops it at INVALID_QUOTE with the IMA failure and its path.
 */
import { NodeContext, NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it, layer } from "@effect/vitest"
import { Context, Effect, Layer, Schedule } from "effect"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Tpm2Tools } from "../../src/tpm/tpm2tools/Tpm2Tools.js"
import { layer as agentLayer, RunningAgent } from "../../src/agent/Agent.js"
import { MeasurementSource } from "../../src/agent/measurements/MeasurementSource.js"
import { layer as machineLayer, SimulatedMachine } from "../../src/agent/measurements/SimulatedMachine.js"
import { addOptionsFor } from "../../src/cli/up/enrol.js"
import { writeMachinePolicies } from "../../src/cli/up/policies.js"
import { trustStoreOf } from "../../src/pki/chain.js"
import { add } from "../../src/tenant/add.js"
import { verifierStatus } from "../../src/tenant/agentCommands.js"
import type { Connections } from "../../src/tenant/connect.js"
import { VerifierClientTls } from "../../src/verifier/pull/ClientTls.js"
import { PollerLive } from "../../src/verifier/pull/Poller.js"
import type { PollerControl } from "../../src/verifier/domain/PollerControl.js"
import { closeClients } from "../agent/support.js"
import { makeTestPki, sqliteLayer, TestRegistrar, testRegistrarLayer } from "../registrar/harness.js"
import { testDatabase } from "../support/db.js"
import { needsSwtpm } from "../support/requirements.js"
import { SwtpmHarness, swtpmEkTrust } from "../support/swtpm.js"
import { captureOutput, tenantConnections } from "../tenant/support.js"
import { startVerifier } from "./apiHarness.js"

const swtpmOk = needsSwtpm()
const pki = makeTestPki()
const AGENT = "1a2b3c4d-0000-4000-8000-00000000f0b1"

type Status = Effect.Effect.Success<ReturnType<typeof verifierStatus>>

/** The agent's status once `ok` holds (asked every 0.5 s, at most 180 s: the machine may be loaded). */
const waitStatus = (c: Connections, ok: (s: Status) => boolean) =>
  verifierStatus(c, AGENT).pipe(
    Effect.filterOrFail(ok, (s) => new Error(`state ${s.operational_state}, ${s.attestation_count} attestations`)),
    Effect.retry({ schedule: Schedule.spaced("500 millis"), times: 360 }),
    Effect.orDie
  )

class World extends Context.Tag("test/verifier/swtpmMeasuredBoot/World")<World, { readonly c: Connections; readonly root: string }>() {}

describe.skipIf(!swtpmOk)("an agent on swtpm attested with a measured-boot policy", () => {
  const Env = Layer.unwrapScoped(Effect.gen(function*() {
    yield* Effect.addFinalizer(() => Effect.sync(closeClients))
    const swtpm = yield* SwtpmHarness
    const root = mkdtempSync(join(tmpdir(), "attest-verifier-swtpm-"))
    const { anchors, ekCaDir } = swtpmEkTrust(swtpm, root)
    const reg = Context.get(yield* Layer.build(testRegistrarLayer({ pki, ekTrustStore: trustStoreOf(anchors, "swtpm CAs") }, sqliteLayer(join(root, "registrar.sqlite")))), TestRegistrar)
    // the verifier's own pull loop, presenting the admin client certificate to agents
    const poller = PollerLive.pipe(Layer.provide(VerifierClientTls.fromPem({ cert: pki.clients.admin.cert!, key: pki.clients.admin.key! })))
    const verifier = yield* startVerifier({
      pki,
      db: yield* testDatabase("sqlite"),
      config: { quote_interval: 1, measured_boot_policy_name: "example", measured_boot_evaluate: "always", enabled_revocation_notifications: [] },
      poller: poller as unknown as Layer.Layer<PollerControl>
    })
    const tpm = Tpm2Tools.layer({ tcti: swtpm.tcti }).pipe(Layer.provide(NodeContext.layer))
    const agent = agentLayer({
      agentId: AGENT,
      dataDir: join(root, "agent"),
      host: "127.0.0.1",
      port: 0,
      trustedClientCa: pki.caPem,
      registrarUrl: reg.httpUrl,
      retry: { initialDelay: "50 millis", maxDelay: "500 millis" },
      payload: { dir: join(root, "agent", "secure"), extractZip: true }
    }).pipe(
      Layer.provide(NodeHttpClient.layerUndici),
      // the machine measures its boot and files into swtpm's PCRs, as firmware and kernel would
      Layer.provideMerge(machineLayer({ name: "swtpm-mb-machine" }).pipe(Layer.provideMerge(tpm)))
    )
    const c = yield* tenantConnections({ caDir: pki.dir, registrar: reg.httpsUrl, verifier: verifier.url, ekCaDir, options: { retry_interval: 0.5, verify_timeout: 120 } })
    return Layer.merge(agent, Layer.succeed(World, { c, root }))
  })).pipe(Layer.provide(SwtpmHarness.layer()))

  layer(Layer.orDie(Env), { timeout: 400_000, excludeTestServices: true })((it) => {
    it.scoped("quotes from swtpm pass the IMA and example measured-boot policies; an unlisted executable stops it with its path", () =>
      Effect.gen(function*() {
        const { c, root } = yield* World
        yield* RunningAgent
        const machine = yield* SimulatedMachine
        const files = yield* writeMachinePolicies(yield* MeasurementSource, root)
        const o = captureOutput()
        yield* add(c, o.out, addOptionsFor(AGENT, files))
        expect(o.last().value).toMatchObject({ agent_id: AGENT, added: true, verified: true })
        const passing = yield* waitStatus(c, (s) => s.attestation_count >= 3)
        expect({ state: passing.operational_state, failure: passing.last_event_id, hash: passing.hash_alg }).toEqual({ state: 3, failure: null, hash: "sha256" })

        yield* machine.measure("/usr/local/bin/not-allowed", "an executable nobody listed")
        const failed = yield* waitStatus(c, (s) => s.operational_state === 9)
        expect({ failure: failed.last_event_id, message: "last_event_message" in failed ? failed.last_event_message : undefined }).toEqual({
          failure: "ima.validation.ima-ng.not_in_allowlist",
          message: expect.stringContaining("/usr/local/bin/not-allowed")
        })
      }))
  })
})

it("keeps the suite file importable when swtpm is missing", () => expect(typeof swtpmOk).toBe("boolean"))
