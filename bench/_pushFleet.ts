/**
 * A push fleet as a process of its own (bench/soak.ts): N push agents (runPushAgent, each on its own
 * simulated TPM and machine, RSA-2048 AKs: the session's proof of possession is Keylime's fixed
 * rsassa; ECC EKs, the verifier never sees them), enrolled with the verifier over v2
 * by the admin (attestation_model "push", a runtime policy of the agent's IMA list), then attesting
 * every `interval` seconds. Prints one JSON line `{"ready": N}` once all attest, then
 * `{"accepted": a, "refused": r, "sessions": s}` every 10 s (what the agents themselves count).
 *
 *   node --import tsx bench/_pushFleet.ts <N> <verifierUrl> <caDir> <interval seconds> <data dir> [first index]
 *
 * `first index` (0): the agents are `pushAgentId(first) …`, so several of these processes can
 * share one verifier (bench/push-fleet.ts spreads a large fleet over processes of their own).
 *
 * The data directory holds each agent's AK (agent.json, sealed by its simulated TPM, whose seed is
 * the agent's index): a later run with the same directory loads the AKs instead of deriving them
 * (an RSA prime search, ~0.15 s of CPU each), as a real fleet's agents keep theirs across restarts.
 * bench/soak.ts keeps it in node_modules/.cache; this process ends with SIGKILL.
 */
import { Context, Effect, Layer, Logger, LogLevel, Option, Ref, Schedule } from "effect"
import { existsSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { TpmSimulator } from "../src/tpm/simulator/TpmSimulator.js"
import { MeasurementSource } from "../src/agent/measurements/MeasurementSource.js"
import * as SimulatedMachine from "../src/agent/measurements/SimulatedMachine.js"
import { STATE_FILE } from "../src/agent/state.js"
import { establishTpmIdentity } from "../src/agent/tpmIdentity.js"
import { rawRequest } from "../src/http/client.js"
import { CA_FILES } from "../src/pki/layout.js"
import { policyOfMachine } from "../test/push/support.js"
import { validBody } from "../test/verifier/support.js"
import { startPushAgents } from "./_pushAgents.js"

const N = Number(process.argv[2] ?? 20)
const url = process.argv[3]!
const caDir = process.argv[4]!
const INTERVAL = Number(process.argv[5] ?? 2)
/**
 * The simulated TPMs' EK: ECC, whose key is derived at once, where an RSA EK is a prime search
 * (~0.2 s of CPU each, as much as the RSA AK's: 200 agents spent over a minute of CPU on EKs
 * the verifier never sees, enrolled here by the admin without a registrar).
 */
const EK_ALG = "ecc" as const
const FIRST = Number(process.argv[7] ?? 0)

/** Push agent ids: UUIDs, as Keylime's v3 API wants; the soak tells them from the pull fleet's `fleet-*`. */
export const pushAgentId = (i: number) => `5eed7000-0000-4000-8000-${String(i).padStart(12, "0")}`

const main = Effect.gen(function*() {
  const dir = process.argv[6]!
  const read = (f: string) => readFileSync(join(caDir, f), "utf8")
  const admin = { ca: read(CA_FILES.caCert), cert: read(CA_FILES.clientCert), key: read(CA_FILES.clientKey) }
  let keptAks = 0
  const agents = yield* Effect.forEach(Array.from({ length: N }, (_, i) => FIRST + i), (i) =>
    Effect.gen(function*() {
      const agentId = pushAgentId(i)
      // a seeded TPM: the AK sealed in the data directory by an earlier run loads on it again
      const ctx = yield* Layer.build(SimulatedMachine.layer({ name: `soak-push-${i}`, banks: ["sha256"] }).pipe(Layer.provideMerge(TpmSimulator.layer({ seed: `soak push agent ${i}` }))))
      const dataDir = join(dir, `agent-${i}`)
      if (existsSync(join(dataDir, STATE_FILE))) keptAks++
      const { ak } = yield* establishTpmIdentity({ agentId, dataDir, ekAlg: EK_ALG, ak: { alg: "rsa", bits: 2048, hash: "sha256", scheme: "rsassa" } }).pipe(Effect.provide(ctx))
      const source = Context.get(ctx, MeasurementSource)
      const list = Option.getOrThrow(yield* Effect.orDie(source.imaList(0))).list
      const body = {
        ...validBody(),
        ak_tpm: Buffer.from(ak.public).toString("base64"),
        runtime_policy: Buffer.from(policyOfMachine(list)).toString("base64"),
        accept_tpm_hash_algs: ["sha256"],
        accept_tpm_signing_algs: ["rsassa"],
        attestation_model: "push"
      }
      const r = yield* rawRequest({ method: "POST", baseUrl: url, path: `/v2.6/agents/${agentId}`, tls: admin, body: JSON.stringify(body), headers: { "content-type": "application/json" } }).pipe(
        // a fresh connection per add: kept-alive ones were reset (ECONNRESET) again and again while key
        // derivations held this process's loop for seconds (likely idle past keep_alive_timeout by then)
        Effect.tapError((e) => Effect.sync(() => process.stderr.write(`push fleet: enrolment of ${agentId}: ${e.message}; again in 2 s\n`))),
        Effect.retry({ times: 20, schedule: Schedule.spaced("2 seconds") }),
        Effect.orDie
      )
      if (r.status !== 200) return yield* Effect.dieMessage(`push enrolment of ${agentId}: ${r.status} ${r.body}`)
      return { agentId, dataDir, ctx }
    }), { concurrency: 4 })
  process.stderr.write(`push fleet: ${keptAks} AKs loaded from ${dir}, ${N - keptAks} made (a prime search each)\n`)
  const { stats } = yield* startPushAgents(agents, url, admin.ca, { intervalSeconds: INTERVAL, ekAlg: EK_ALG })
  const totals = Effect.map(Effect.forEach(stats, Ref.get), (all) =>
    all.reduce((t, c) => ({ accepted: t.accepted + c.accepted, refused: t.refused + c.refused, sessions: t.sessions + c.sessions, attesting: t.attesting + (c.accepted > 0 ? 1 : 0) }), { accepted: 0, refused: 0, sessions: 0, attesting: 0 }))
  const from = Date.now()
  while ((yield* totals).attesting < N && Date.now() - from < 300_000) yield* Effect.sleep("500 millis")
  const ready = yield* totals
  if (ready.attesting < N) {
    const statuses = (yield* Effect.forEach(stats, Ref.get)).map((c) => c.lastStatus)
    process.stderr.write(`push fleet: ${N - ready.attesting} agents not attesting after 300 s; their last statuses: ${[...new Set(statuses)].join(", ")}\n`)
  }
  process.stdout.write(JSON.stringify({ ready: ready.attesting }) + "\n")
  yield* Effect.repeat(Effect.flatMap(totals, (t) => Effect.sync(() => process.stdout.write(JSON.stringify(t) + "\n"))), Schedule.spaced("10 seconds"))
})

if (process.argv[1]?.endsWith("_pushFleet.ts")) {
  Effect.runPromise(main.pipe(Effect.scoped, Effect.provide(Logger.replace(Logger.defaultLogger, Logger.withConsoleError(Logger.logfmtLogger))), Logger.withMinimumLogLevel(process.env["BENCH_LOG"] === "1" ? LogLevel.Info : LogLevel.Error))).catch((e) => {
    console.error(e)
    process.exit(1)
  })
}
