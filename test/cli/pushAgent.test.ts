/**
 * `attest push-agent` as a process: it registers with a registrar, the admin has enrolled it at the
 * verifier (both API families on one HTTPS listener, with real certificates), and its attestations
 * pass, cycle after cycle, until it is stopped.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import * as crypto from "node:crypto"
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { BoundListeners } from "../../src/http/HttpServers.js"
import { simulatorManufacturerCa, TpmSimulator } from "../../src/tpm/simulator/TpmSimulator.js"
import { establishTpmIdentity } from "../../src/agent/tpmIdentity.js"
import { trustStoreOf } from "../../src/pki/chain.js"
import { RegistrarServerLive } from "../../src/registrar/Server.js"
import { Agents } from "../../src/verifier/domain/Agents.js"
import { tempDir } from "../agent/support.js"
import { b64, PushTestEnv, pushVerifier } from "../push/support.js"
import { makeTestPki, sqliteLayer, testServerTls } from "../registrar/harness.js"
import { startAttest } from "../support/attestProcess.js"
import { validBody } from "../verifier/support.js"

const AGENT = "d432fbb3-d2f1-4a97-9ef7-75bd81c000e1"
const pki = makeTestPki()

describe("attest push-agent", () => {
  it.live("registers, attests repeatedly against the verifier, every attestation passes", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("attest-cli-push-agent-")
      const registrar = yield* Layer.build(
        RegistrarServerLive({ host: "127.0.0.1", port: 0, tlsPort: 0, ekTrustStore: trustStoreOf([new crypto.X509Certificate(simulatorManufacturerCa().pem)]), tpmIdentity: "default" }).pipe(
          Layer.provide(testServerTls(pki)),
          Layer.provide(sqliteLayer(join(dir, "registrar.sqlite")))
        )
      )
      const registrarPort = Context.get(registrar, BoundListeners).get("registrar-http")!.port
      const env = yield* PushTestEnv
      // the AK the agent will load from its data directory (the simulated TPM's state is kept there too)
      const dataDir = join(dir, "agent")
      mkdirSync(dataDir, { recursive: true })
      const identity = yield* establishTpmIdentity({ agentId: AGENT, dataDir, ekAlg: "rsa", ak: { alg: "rsa", bits: 2048, hash: "sha256", scheme: "rsassa" } }).pipe(
        Effect.provide(TpmSimulator.layer({ stateFile: join(dataDir, "simulated-tpm.json") }))
      )
      yield* (yield* Agents).add(AGENT, { ...validBody(), ak_tpm: b64(identity.ak.public), accept_tpm_hash_algs: ["sha256"], accept_tpm_signing_algs: ["rsassa"], attestation_model: "push" })

      const caFile = join(dir, "verifier-ca.pem")
      writeFileSync(caFile, env.ca)
      const config = join(dir, "attest.toml")
      writeFileSync(config, [
        "[agent]",
        `uuid = "${AGENT}"`,
        `data_dir = "${dataDir}"`,
        `registrar_port = ${registrarPort}`,
        `verifier_url = "${env.url}"`,
        `verifier_tls_ca_cert = "${caFile}"`,
        "attestation_interval_seconds = 1",
        ""
      ].join("\n"))
      const run = startAttest(["push-agent", "--config", config, "--tpm", "simulator"])
      yield* Effect.addFinalizer(() => Effect.promise(() => run.stop()))
      yield* Effect.promise(() => run.waitFor(/pushing evidence to/, 120_000))

      // wait (generously: a loaded machine) for three completed attestations
      const started = Date.now()
      let verdicts: Array<string> = []
      while (Date.now() - started < 120_000) {
        const listed = yield* env.request("GET", `/v3.0/agents/${AGENT}/attestations`, { admin: true })
        verdicts = (listed.json?.data ?? []).filter((a: any) => a.attributes.stage === "verification_complete").map((a: any) => a.attributes.evaluation)
        if (verdicts.length >= 3) break
        yield* Effect.sleep("200 millis")
      }
      expect(verdicts.slice(0, 3)).toEqual(["pass", "pass", "pass"])
      expect(run.output()).toMatch(/activated with registrar/)
    }).pipe(Effect.scoped, Effect.provide(pushVerifier("sqlite", { quote_interval: 1 }))), 300_000)
})
