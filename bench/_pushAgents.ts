/**
 * The push agents of bench/push-fleet.ts and bench/public-flood.ts: each runs `runPushAgent` in this
 * process on its own simulated TPM and machine (`ctx`), attesting every 2 s, counting into its stats.
 */
import { NodeHttpClient } from "@effect/platform-node"
import { type Context, Effect, type Fiber, Ref } from "effect"
import { type PushAgentStats, runPushAgent } from "../src/push-agent/PushAgent.js"
import type { KeyAlg } from "../src/tpm/Tpm.js"

export interface BenchPushAgent {
  readonly agentId: string
  readonly dataDir: string
  readonly ctx: Context.Context<never>
}

/** What differs from the default agent: its interval (2 s), its EK's algorithm (RSA: the one its AK was made under). */
export interface BenchPushAgentOptions {
  readonly intervalSeconds?: number
  readonly ekAlg?: KeyAlg
}

/** Starts every agent against `verifierUrl`: their stats and fibers. */
export const startPushAgents = (agents: ReadonlyArray<BenchPushAgent>, verifierUrl: string, verifierCa: string, options: BenchPushAgentOptions = {}) =>
  Effect.gen(function*() {
    const stats = yield* Effect.forEach(agents, () => Ref.make<PushAgentStats>({ submitted: 0, accepted: 0, refused: 0, sessions: 0, lastStatus: 0 }))
    const fibers: ReadonlyArray<Fiber.RuntimeFiber<unknown, unknown>> = yield* Effect.forEach(agents, (a, i) =>
      Effect.fork(
        runPushAgent({
          agentId: a.agentId,
          dataDir: a.dataDir,
          contactIp: "127.0.0.1",
          contactPort: 9002,
          verifierUrl,
          verifierCa,
          attestationIntervalSeconds: options.intervalSeconds ?? 2,
          ...(options.ekAlg === undefined ? {} : { ekAlg: options.ekAlg }),
          backoff: { initialMs: 500, maxMs: 5000, multiplier: 2, maxRetries: 5, jitter: true }
        }, stats[i]).pipe(Effect.provide(a.ctx as Context.Context<any>), Effect.provide(NodeHttpClient.layerUndici))
      ))
    return { stats, fibers }
  })
