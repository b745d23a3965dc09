/**
 * A whole fleet in one Effect program: a registrar (its domain service over its own in-memory
 * SQLite), a verifier (its v2 domain, its pull loop over an in-process AgentClient, its push
 * protocol, over an in-memory SQLite behind the script's switch) and N simulated agents, pull and
 * push, each with its seeded TPM and machine. Every agent registers and activates with the
 * registrar; each is enrolled through the verifier's v2 domain (Agents.add) with the body a tenant
 * builds from the registrar's record and a runtime policy of its machine's files. Then the script
 * plays and the fleet's clock runs for `duration`; the result is the verdict log.
 */
import * as crypto from "node:crypto"
import { Duration, Effect, Layer, Logger, LogLevel, Random, TestClock } from "effect"
import { makeRuntimePolicy } from "../../schemas/RuntimePolicy.js"
import { defaultFiles } from "../agent/measurements/SimulatedMachine.js"
import { VerifierConfig } from "../config/services.js"
import type { VerifierOptions } from "../config/sections.js"
import type { Nk } from "../keys/index.js"
import { trustStoreOf } from "../pki/chain.js"
import { EkTrustStore, Registrar, RegistrarSettings } from "../registrar/Registrar.js"
import { deriveRsaKey } from "../tpm/simulator/derive.js"
import { simulatorManufacturerCa } from "../tpm/simulator/manufacturer.js"
import {
  AgentRepo, Agents, Attestations, Liveness, MbPolicyRepo, NotificationOutbox, NotifiersLive, PolicyCache, pollerLayer, PushRepo, RuntimePolicyRepo, Sessions,
  SessionSweep
} from "../verifier/index.js"
import { DatabaseSwitch, SwitchedDatabase } from "./databaseSwitch.js"
import { FLEET_EPOCH_MS, onFleetClock } from "./fleetClock.js"
import { inProcessAgentClient } from "./inProcessAgentClient.js"
import { defaultPushBackoff, runInProcessPushAgent } from "./inProcessPushAgent.js"
import { eventProblem, type FleetEvent, playEvent } from "./script.js"
import { FleetSetupError, type SimulatedAgent, startAgent, FLEET_AGENT_API_VERSION } from "./simulatedAgent.js"
import { type AgentModel, lineText, loggingAgentRepo, loggingPushRepo, makeVerdictLog, type VerdictLine, VerdictLog } from "./verdictLog.js"

export interface FleetOptions {
  /** Every key, nonce-free choice and jitter of the fleet follows from it. */
  readonly seed: string
  /** How many agents (numbered from 1). */
  readonly agents: number
  /** Which agents push (API 3.0); default every tenth (10, 20, …). */
  readonly push?: (agent: number) => boolean
  /** Simulated time to run, e.g. "60 minutes". */
  readonly duration: Duration.DurationInput
  readonly script?: ReadonlyArray<FleetEvent>
  /** The verifier's options over the fleet's defaults (FLEET_VERIFIER_DEFAULTS). */
  readonly verifier?: Partial<VerifierOptions>
  /** The fleet's own log lines (registrar, verifier, agents) at and above this level; default none. */
  readonly logLevel?: LogLevel.LogLevel
}

/**
 * The verifier's options in a fleet unless the test says otherwise: quotes every 60 s (Keylime's
 * 2 s would make an hour 90,000 quotes for 50 agents), an unreachable agent retried 3 times with
 * retry_interval^n backoff within a 10 s request timeout, agents without mTLS (no sockets).
 */
export const FLEET_VERIFIER_DEFAULTS: Partial<VerifierOptions> = {
  quote_interval: 60,
  retry_interval: 2,
  exponential_backoff: true,
  max_retries: 3,
  request_timeout: 10,
  enable_agent_mtls: false,
  verifier_id: "fleet",
  // no revocation notices: the fleet judges; what a notice does is tested elsewhere
  enabled_revocation_notifications: []
}

export interface FleetRun {
  readonly lines: ReadonlyArray<VerdictLine>
  /** The log as text: one line per verdict, each ending in a newline. */
  readonly text: string
  /** The agents' ids by number (index 0 is agent 1). */
  readonly agentIds: ReadonlyArray<string>
  /** The model of each agent by id. */
  readonly models: ReadonlyMap<string, AgentModel>
}

/** The id of agent `n` in a fleet of `size`: agent-03 in a fleet of 50. */
export const agentIdOf = (n: number, size: number) => `agent-${String(n).padStart(String(size).length, "0")}`

const sha256Hex = (s: string) => crypto.createHash("sha256").update(s).digest("hex")

/** The runtime policy every agent is enrolled with: its machine's usual files (boot_aggregate not judged: no boot log is asked for). */
const fleetPolicy = Buffer.from(JSON.stringify(makeRuntimePolicy({
  digests: Object.fromEntries(defaultFiles.map((f) => [f.path, [sha256Hex(String(f.content))]])),
  excludes: ["boot_aggregate"]
}))).toString("base64")

/** The creation body a tenant sends for an agent the registrar holds (its AK and contact from there). */
const creationBody = (record: { readonly aik_tpm: string; readonly ip: string | null; readonly port: number | null }, model: AgentModel) => ({
  v: null,
  cloudagent_ip: record.ip ?? "127.0.0.1",
  cloudagent_port: record.port ?? 9002,
  verifier_ip: "127.0.0.1",
  verifier_port: 8881,
  tpm_policy: JSON.stringify({ mask: "0x400" }),
  runtime_policy: fleetPolicy,
  runtime_policy_name: null,
  runtime_policy_key: null,
  mb_policy: null,
  mb_policy_name: null,
  ima_sign_verification_keys: "",
  metadata: "{}",
  revocation_key: "",
  accept_tpm_hash_algs: ["sha512", "sha384", "sha256"],
  accept_tpm_encryption_algs: ["ecc", "rsa"],
  accept_tpm_signing_algs: ["ecdsa", "rsassa"],
  ak_tpm: record.aik_tpm,
  mtls_cert: null,
  supported_version: FLEET_AGENT_API_VERSION,
  attestation_model: model
})

const registrarLayer = Registrar.Default.pipe(
  Layer.provide(Layer.succeed(EkTrustStore, trustStoreOf([new crypto.X509Certificate(simulatorManufacturerCa().pem)], "simulator CA"))),
  Layer.provide(Layer.succeed(RegistrarSettings, { tpmIdentity: "default" })),
  Layer.provide(SwitchedDatabase)
)

/** The verifier's services over its switched database, logging verdicts, asking `agents` in-process. */
const verifierLayer = (options: VerifierOptions, agents: ReadonlyMap<string, SimulatedAgent>) => {
  const repositories = Layer.mergeAll(
    loggingAgentRepo(options.max_retries).pipe(Layer.provide(AgentRepo.Default)),
    loggingPushRepo.pipe(Layer.provide(PushRepo.Default)),
    RuntimePolicyRepo.Default,
    MbPolicyRepo.Default,
    NotificationOutbox.Default,
    PolicyCache.Default
  )
  const poller = pollerLayer.pipe(Layer.provide(NotifiersLive.pipe(Layer.provideMerge(inProcessAgentClient(agents)))))
  const push = Attestations.Default.pipe(Layer.provideMerge(Layer.mergeAll(Sessions.Default, Liveness.Default, SessionSweep.Default)))
  return Layer.mergeAll(Agents.Default, push).pipe(
    Layer.provideMerge(poller),
    Layer.provideMerge(repositories),
    Layer.provideMerge(Layer.merge(SwitchedDatabase, VerifierConfig.test(options)))
  )
}

/** Runs the fleet's history; the same options give the same log, byte for byte. */
export const runFleet = (o: FleetOptions): Effect.Effect<FleetRun, FleetSetupError> => {
  const size = o.agents
  const isPush = o.push ?? ((n: number) => n % 10 === 0)
  const options = VerifierConfig.test({ ...FLEET_VERIFIER_DEFAULTS, ...o.verifier })
  const script = o.script ?? []
  return Effect.gen(function*() {
    if (!Number.isInteger(size) || size < 1) return yield* new FleetSetupError({ agentId: "(fleet)", step: "options", reason: `agents must be a whole number from 1, got ${size}` })
    const problem = script.map((e) => eventProblem(e, size)).find((p) => p !== undefined)
    if (problem !== undefined) return yield* new FleetSetupError({ agentId: "(script)", step: "script", reason: problem })
    const config = yield* VerifierConfig
    const log = makeVerdictLog(FLEET_EPOCH_MS)
    // one NK for the fleet (see simulatedAgent.ts): RSA from the seed, the same on every run
    const nkKey = deriveRsaKey(crypto.createHash("sha256").update(`${o.seed}/nk`).digest(), "nk", 2048)
    const nk: Nk = { privateKey: nkKey, publicPem: crypto.createPublicKey(nkKey).export({ type: "spki", format: "pem" }).toString() }

    const registrar = yield* Layer.build(registrarLayer).pipe(Effect.orDie)
    const agents = new Map<string, SimulatedAgent>()
    const ordered: Array<SimulatedAgent> = []
    for (let n = 1; n <= size; n++) {
      const agentId = agentIdOf(n, size)
      const agent = yield* startAgent({ agentId, model: isPush(n) ? "push" : "pull", seed: o.seed, nk }).pipe(Effect.provide(registrar))
      agents.set(agentId, agent)
      ordered.push(agent)
    }

    const verifier = yield* Layer.build(verifierLayer(config, agents).pipe(Layer.provide(Layer.succeed(VerdictLog, log)))).pipe(Effect.orDie)
    const database = yield* Effect.provide(DatabaseSwitch, verifier)
    yield* Effect.gen(function*() {
      const enrol = yield* Agents
      const reg = yield* Registrar
      for (const agent of ordered) {
        const record = yield* Effect.orDie(reg.show(agent.agentId))
        yield* enrol.add(agent.agentId, creationBody(record, agent.model)).pipe(
          Effect.mapError((e) => new FleetSetupError({ agentId: agent.agentId, step: "enrolment", reason: e.message }))
        )
      }
      for (const [i, agent] of ordered.entries()) {
        if (agent.model !== "push") continue
        yield* Effect.forkScoped(runInProcessPushAgent({
          agent,
          address: `10.0.${i >> 8}.${i & 255}`,
          intervalSeconds: config.quote_interval,
          backoff: defaultPushBackoff
        }))
      }
      for (const e of script) yield* Effect.forkScoped(playEvent(e, (n) => ordered[n - 1]!, database))
      yield* TestClock.adjust(o.duration)
    }).pipe(Effect.provide(registrar), Effect.provide(verifier))

    const lines = [...log.lines]
    return {
      lines,
      text: lines.map((l) => `${lineText(l)}\n`).join(""),
      agentIds: ordered.map((a) => a.agentId),
      models: new Map(ordered.map((a) => [a.agentId, a.model] as const))
    }
  }).pipe(
    Effect.scoped,
    Effect.provide(options),
    Effect.withRandom(Random.make(o.seed)),
    Logger.withMinimumLogLevel(o.logLevel ?? LogLevel.None),
    // no exporter reads the fleet's spans (the verifier's loops turn theirs off the same way)
    Effect.withTracerEnabled(false),
    onFleetClock
  )
}
