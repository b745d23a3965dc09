/**
 * `attest up --push N`: N push-model agents (`attest push-agent`'s runPushAgent) on simulated TPMs
 * and simulated machines, each in `agents/push-<i>` under the data directory (TPM state, AK, agent
 * id kept there, so a restart is the same agent). They register with the registrar like the pull
 * agents, listen on no port, and push evidence to the verifier every quote interval; a
 * push agent retries on its own until it is enrolled.
 */
import { NodeHttpClient } from "@effect/platform-node"
import { Context, Effect, Layer, Ref } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { MeasurementSource, type MeasurementSourceShape } from "../../agent/measurements/MeasurementSource.js"
import { layer as simulatedMachine, SimulatedMachine, type SimulatedMachineShape } from "../../agent/measurements/SimulatedMachine.js"
import { type PushAgentStats, runPushAgent } from "../../push-agent/PushAgent.js"
import { TpmSimulator } from "../../tpm/simulator/TpmSimulator.js"

export interface UpPushAgent {
  /** The agent's number in `attest up` (after the pull agents'). */
  readonly n: number
  readonly agentId: string
  readonly dir: string
  readonly machine: SimulatedMachineShape
  readonly source: MeasurementSourceShape
  /** What the agent itself counts (evidence accepted, steps refused, sessions). */
  readonly stats: Ref.Ref<PushAgentStats>
}

export interface PushAgentsOptions {
  /** Numbers in the table: the first push agent's. */
  readonly firstNumber: number
  readonly count: number
  readonly dataDir: string
  readonly host: string
  /** The port each registers as its contact port (unused: a push agent listens on none). */
  readonly contactPort: (i: number) => number
  readonly registrarUrl: string
  readonly verifierUrl: string
  readonly verifierCa: string
  readonly intervalSeconds: number
  /** The agent id kept in a directory, or a new one. */
  readonly agentIdIn: (dir: string) => string
}

/**
 * Starts the push agents in the current scope: each one's TPM and machine are built here (so the
 * machine can be tampered with and its lists make its policies), its loop runs in a fiber of the
 * scope. A failure to start one is returned as a message, not raised.
 */
export const startPushAgents = (o: PushAgentsOptions) =>
  Effect.forEach(
    Array.from({ length: o.count }, (_, i) => i),
    (i) =>
      Effect.gen(function*() {
        const name = `push-${i + 1}`
        const dir = path.join(o.dataDir, "agents", name)
        fs.mkdirSync(dir, { recursive: true, mode: 0o700 })
        const agentId = o.agentIdIn(dir)
        const ctx = yield* Layer.build(
          simulatedMachine({ name }).pipe(Layer.provideMerge(TpmSimulator.layer({ stateFile: path.join(dir, "simulated-tpm.json") })))
        )
        const stats = yield* Ref.make<PushAgentStats>({ submitted: 0, accepted: 0, refused: 0, sessions: 0, lastStatus: 0 })
        yield* runPushAgent({
          agentId,
          dataDir: dir,
          registrarUrl: o.registrarUrl,
          registrarRetry: { initialDelay: "100 millis", maxDelay: "1 second" },
          contactIp: o.host,
          contactPort: o.contactPort(i),
          verifierUrl: o.verifierUrl,
          verifierCa: o.verifierCa,
          attestationIntervalSeconds: o.intervalSeconds,
          // short waits for a demonstration: the verifier is on this machine
          backoff: { initialMs: 500, maxMs: 5_000, multiplier: 2, maxRetries: 4, jitter: true }
        }, stats).pipe(
          Effect.provide(ctx),
          Effect.provide(NodeHttpClient.layerUndici),
          Effect.catchAllCause((cause) => Effect.logError(`push agent ${i + 1} stopped`, cause)),
          Effect.forkScoped
        )
        const agent: UpPushAgent = {
          n: o.firstNumber + i,
          agentId,
          dir,
          machine: Context.get(ctx, SimulatedMachine),
          source: Context.get(ctx, MeasurementSource),
          stats
        }
        return agent
      }),
    { concurrency: "unbounded" }
  )
