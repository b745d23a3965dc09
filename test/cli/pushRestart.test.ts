/**
 * Push deadlines survive the verifier process: `attest verifier` (its own process, SQLite) takes a
 * push agent's attestation, is killed with SIGKILL, and is started again on the same database after
 * the deadline (quote_interval * 5) passed: a restart is not a failure, so the agent first gets one
 * full deadline from the moment the verifier listens, and as it does not attest in it, its v2 status
 * is TIMEOUT then (Keylime loses its timers and keeps the agent PASS); the agent's next attestation
 * passes and restores it.
 */
import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { TpmSimulator } from "../../src/tpm/simulator/TpmSimulator.js"
import * as SimulatedMachine from "../../src/agent/measurements/SimulatedMachine.js"
import { establishTpmIdentity } from "../../src/agent/tpmIdentity.js"
import { rawRequest } from "../../src/http/client.js"
import { CA_FILES } from "../../src/pki/layout.js"
import { runPushAgent } from "../../src/push-agent/PushAgent.js"
import { tempDir } from "../agent/support.js"
import { startAttest } from "../support/attestProcess.js"
import { validBody } from "../verifier/support.js"

const AGENT = "d432fbb3-d2f1-4a97-9ef7-75bd81c000d1"
const b64 = (b: Uint8Array) => Buffer.from(b).toString("base64")

describe("push deadlines across a killed verifier", () => {
  it.live("kill -9, restart after the deadline: TIMEOUT one deadline after it starts; the next attestation restores PASS", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("attest-push-restart-")
      const caDir = join(dir, "cv_ca")
      const config = join(dir, "attest.toml")
      writeFileSync(config, ["[verifier]", "port = 0", `tls_dir = "generate"`, `ca_dir = "${caDir}"`, `data_dir = "${join(dir, "data")}"`, "metrics_port = 0", "quote_interval = 1", ""].join("\n"))
      const start = Effect.gen(function*() {
        const run = startAttest(["verifier", "--config", config])
        yield* Effect.addFinalizer(() => Effect.promise(() => run.stop()))
        const line = yield* Effect.promise(() => run.waitFor(/attest verifier: API \(HTTPS, mTLS admin\) on https:\/\/\S+/, 120_000))
        return { run, url: /on (https:\/\/\S+)/.exec(line.text)![1]! }
      })
      const first = yield* start
      const ca = readFileSync(join(caDir, CA_FILES.caCert), "utf8")
      const admin = { ca, cert: readFileSync(join(caDir, CA_FILES.clientCert), "utf8"), key: readFileSync(join(caDir, CA_FILES.clientKey), "utf8") }
      const send = (url: string, method: string, path: string, body?: unknown) =>
        rawRequest({ method, baseUrl: url, path, tls: admin, ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { "content-type": "application/json" } }) }).pipe(
          Effect.map((r) => ({ status: r.status, json: JSON.parse(r.body) })),
          Effect.orDie
        )

      const dataDir = join(dir, "agent")
      const { ak } = yield* establishTpmIdentity({ agentId: AGENT, dataDir, ekAlg: "rsa", ak: { alg: "rsa", bits: 2048, hash: "sha256", scheme: "rsassa" } })
      expect((yield* send(first.url, "POST", `/v2.6/agents/${AGENT}`, { ...validBody(), ak_tpm: b64(ak.public), accept_tpm_hash_algs: ["sha256"], accept_tpm_signing_algs: ["rsassa"], attestation_model: "push" })).status).toEqual(200)
      const attest = (url: string) =>
        runPushAgent({
          agentId: AGENT,
          dataDir,
          contactIp: "127.0.0.1",
          contactPort: 9002,
          verifierUrl: url,
          verifierCa: ca,
          attestationIntervalSeconds: 1,
          backoff: { initialMs: 100, maxMs: 400, multiplier: 2, maxRetries: 5, jitter: false },
          cycles: 1
        }).pipe(Effect.provide(NodeHttpClient.layerUndici))
      const status = (url: string) =>
        Effect.gen(function*() {
          // the verdict is in the background: wait for it (generously)
          const started = Date.now()
          for (;;) {
            const s = yield* send(url, "GET", `/v2.6/agents/${AGENT}`)
            if (s.json.results.attestation_count > 0 || Date.now() - started > 60_000) return s.json.results.attestation_status as string
            yield* Effect.sleep("100 millis")
          }
        })

      expect((yield* attest(first.url)).accepted).toEqual(1)
      expect(yield* status(first.url)).toEqual("PASS")
      first.run.child.kill("SIGKILL")
      yield* Effect.promise(() => first.run.exited)
      yield* Effect.sleep("6 seconds") // past quote_interval * 5 while no verifier runs

      const second = yield* start
      // PASS through one deadline (5 s) from the start, then TIMEOUT: wait for it
      const swept = Date.now()
      let after = yield* status(second.url)
      while (after !== "TIMEOUT" && Date.now() - swept < 30_000) {
        yield* Effect.sleep("100 millis")
        after = yield* status(second.url)
      }
      expect(after).toEqual("TIMEOUT")
      expect((yield* attest(second.url)).accepted).toEqual(1)
      const started = Date.now()
      let now = "TIMEOUT"
      while (now !== "PASS" && Date.now() - started < 60_000) {
        yield* Effect.sleep("100 millis")
        now = yield* status(second.url)
      }
      expect(now).toEqual("PASS")
    }).pipe(Effect.scoped, Effect.provide(SimulatedMachine.layer({ name: "push-restart" }).pipe(Layer.provideMerge(TpmSimulator.layer({}))))), 300_000)
})
