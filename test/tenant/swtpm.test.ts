/**
 * `attest tenant add --verify` with the agent on swtpm (tpm2-tools layer): the EK certificate from
 * swtpm's own manufacturer CA checked against an ek_ca_dir holding it, the identity quote made by
 * swtpm with the AK the registrar recorded and PCR 16 extended in swtpm, the payload delivered
 * (V brought by a stand-in for the poller's PROVIDE_V step).
 */
import { NodeContext, NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it, layer } from "@effect/vitest"
import { Context, Effect, Fiber, Layer, Option } from "effect"
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Tpm2Tools } from "../../src/tpm/tpm2tools/Tpm2Tools.js"
import { layer as agentLayer, RunningAgent } from "../../src/agent/Agent.js"
import { layer as machineLayer } from "../../src/agent/measurements/SimulatedMachine.js"
import { trustStoreOf } from "../../src/pki/chain.js"
import { add } from "../../src/tenant/add.js"
import { status } from "../../src/tenant/agentCommands.js"
import { closeClients } from "../agent/support.js"
import { makeTestPki, sqliteLayer, TestRegistrar, testRegistrarLayer } from "../registrar/harness.js"
import { testDatabase } from "../support/db.js"
import { needsSwtpm } from "../support/requirements.js"
import { SwtpmHarness, swtpmEkTrust } from "../support/swtpm.js"
import { startVerifier } from "../verifier/apiHarness.js"
import { recordingPoller } from "../verifier/support.js"
import { captureOutput, deliverVTo, tenantConnections } from "./support.js"

const swtpmOk = needsSwtpm()
const pki = makeTestPki()
const AGENT = "1a2b3c4d-0000-4000-8000-00000000f001"

describe.skipIf(!swtpmOk)("attest tenant add with an agent on swtpm", () => {
  const Env = Layer.unwrapScoped(Effect.gen(function*() {
    const swtpm = yield* SwtpmHarness
    const root = mkdtempSync(join(tmpdir(), "attest-tenant-swtpm-"))
    const { anchors, ekCaDir } = swtpmEkTrust(swtpm, root)
    const reg = Context.get(yield* Layer.build(testRegistrarLayer({ pki, ekTrustStore: trustStoreOf(anchors, "swtpm CAs") }, sqliteLayer(join(root, "registrar.sqlite")))), TestRegistrar)
    const verifier = yield* startVerifier({ pki, db: yield* testDatabase("sqlite"), poller: recordingPoller(new Set([AGENT])).layer })
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
      Layer.provideMerge(machineLayer({ name: "swtpm-tenant-machine" }).pipe(Layer.provideMerge(tpm)))
    )
    const c = yield* tenantConnections({ caDir: pki.dir, registrar: reg.httpsUrl, verifier: verifier.url, ekCaDir, options: { retry_interval: 1, verify_timeout: 60 } })
    yield* Effect.addFinalizer(() => Effect.sync(closeClients))
    return Layer.merge(agent, Layer.succeed(Conns, { c, root }))
  })).pipe(Layer.provide(SwtpmHarness.layer()))

  layer(Layer.orDie(Env), { timeout: 300_000, excludeTestServices: true })((it) => {
    it.scoped("EK certificate, identity quote and PCR 16 from swtpm; U, payload and V delivered; K verified", () =>
      Effect.gen(function*() {
        const { c, root } = yield* Conns
        const agent = yield* RunningAgent
        const o = captureOutput()
        const payload = join(root, "payload.txt")
        writeFileSync(payload, "delivered through swtpm\n")
        const deliver = yield* Effect.fork(deliverVTo(c, agent, { cert: pki.clients.admin.cert!, key: pki.clients.admin.key! }, AGENT))
        yield* add(c, o.out, {
          agentId: AGENT,
          ip: Option.none(),
          port: Option.none(),
          runtimePolicy: Option.none(),
          runtimePolicyName: Option.none(),
          mbRefstate: Option.none(),
          mbPolicyName: Option.none(),
          tpmPolicy: Option.none(),
          payload: Option.some(payload),
          cert: Option.none(),
          include: [],
          revocationKey: Option.none(),
          verify: true
        })
        yield* Fiber.join(deliver)
        expect(o.notes.join("\n")).toMatch(/EK certificate trusted \(chains to .*\)/)
        expect(o.last().value).toMatchObject({ agent_id: AGENT, added: true, verified: true })
        expect(readFileSync(join(root, "agent", "secure", "unzipped", "decrypted_payload"), "utf8")).toEqual("delivered through swtpm\n")
        yield* status(c, o.out, AGENT)
        expect(o.last().value).toMatchObject({ agent_id: AGENT, operational_state: 1 })
      }))
  })
})

class Conns extends Context.Tag("test/tenant/swtpm/Conns")<Conns, { readonly c: Effect.Effect.Success<ReturnType<typeof tenantConnections>>; readonly root: string }>() {}

it("keeps the suite file importable when swtpm is missing", () => expect(typeof swtpmOk).toBe("boolean"))
