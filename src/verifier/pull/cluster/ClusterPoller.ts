/**
 * The pull loop in cluster mode (issue 24): PollerControl over the PullAgent entities, so the v2
 * domain's add, delete, stop and reactivate work from any runner (start → Restart, stop → Stop; an
 * agent is owned here when its loop runs in this process, else DELETE takes the 202 + TERMINATED
 * way and the loop that runs it deletes it), and one reconciler for the whole cluster (a
 * `Singleton`: it moves with its shard) that sends Ensure to every pull agent that needs a loop, in
 * place of each process's resume and reconcile. `verifier_id` names agents for listing; it no
 * longer decides who polls them.
 *
 *   clusterPollerLayer(section)   PollerControl over the services the single-process poller needs
 *                                 (AgentLoopServices) and this runner (runner.ts)
 */
import { Singleton } from "@effect/cluster"
import { Clock, Effect, Layer, Schedule } from "effect"
import type { VerifierOptions } from "../../../config/sections.js"
import { AgentLoop } from "../agentLoop.js"
import { makeAgentLoopRunner } from "../Poller.js"
import { PollerControl } from "../../domain/PollerControl.js"
import { AgentRepo } from "../../domain/repo/AgentRepo.js"
import { FleetRepo } from "../../domain/repo/FleetRepo.js"
import { ClusterLoops, PullAgent, PullAgentLive } from "./PullAgentEntity.js"
import { PushDutiesSingleton } from "./PushDutiesSingleton.js"
import { runnerLayer } from "./runner.js"

/**
 * How often the reconciler looks for agents that need a loop. It Ensures the agents whose loop last
 * ran on a runner the registry no longer holds alive (at once: the engine does not re-deliver every
 * moved agent's keep-alive) and, whatever the registry believes, every agent whose next poll is
 * LATE_AFTER_S overdue: a survivor's loops for a dead runner's agents start within about a period
 * of the registry's verdict, and within LATE_AFTER_S plus a period of their missed poll at worst.
 */
const RECONCILE_EVERY_S = 1
/** How late an agent's next poll may be (whole seconds) before it counts as having no loop. */
const LATE_AFTER_S = 2
/** Ensure messages in flight at once (each is one small message to the agent's runner). */
const ENSURE_CONCURRENCY = 64

const ClusterLoopsLive = Layer.effect(
  ClusterLoops,
  Effect.gen(function*() {
    return { runner: yield* makeAgentLoopRunner, agents: yield* AgentRepo, running: new Set<string>() }
  })
).pipe(Layer.provide(AgentLoop.layer))

/** A message the engine did not take (its storage failed, a mailbox full): said, and the reconciler sends Ensure again. */
const logUnsent = (what: string, agentId: string) => (cause: unknown) =>
  Effect.logWarning(`cluster: ${what} for agent ${agentId} not sent; the reconciler will ensure its loop`, cause)

const ControlLive = Layer.effect(
  PollerControl,
  Effect.gen(function*() {
    const client = yield* PullAgent.client
    const { running } = yield* ClusterLoops
    return PollerControl.of({
      start: (agentId) => client(agentId).Restart(undefined, { discard: true }).pipe(Effect.catchAllCause(logUnsent("Restart", agentId))),
      stop: (agentId) => client(agentId).Stop(undefined, { discard: true }).pipe(Effect.catchAllCause(logUnsent("Stop", agentId))),
      isOwned: (agentId) => Effect.sync(() => running.has(agentId))
    })
  })
)

const Reconciler = (c: VerifierOptions) =>
  Singleton.make(
    "PullAgentReconciler",
    Effect.gen(function*() {
      const client = yield* PullAgent.client
      const fleet = yield* FleetRepo
      const ensureAll = Effect.gen(function*() {
        // only agents in trouble: a live loop keeps its next poll ahead, so a healthy fleet gets no
        // message (an Ensure to every agent every 10 s was 0.2 messages per attestation at
        // quote_interval 2 s, half of them between runners: most of two runners' extra CPU)
        const now = Math.floor((yield* Clock.currentTimeMillis) / 1000)
        const live = yield* fleet.liveRunners(c.cluster_lock_expiration)
        const ids = yield* fleet.needingLoops(now - LATE_AFTER_S, live)
        yield* Effect.forEach(ids, (id) => client(id).Ensure(undefined, { discard: true }).pipe(Effect.catchAllCause(logUnsent("Ensure", id))), {
          concurrency: ENSURE_CONCURRENCY,
          discard: true
        })
      }).pipe(Effect.catchAllCause((cause) => Effect.logWarning("cluster: agents not reconciled", cause)))
      yield* Effect.logInfo("cluster: the pull-agent reconciler runs on this runner")
      yield* Effect.repeat(ensureAll, Schedule.spaced(`${RECONCILE_EVERY_S} seconds`))
    })
  )

/** Cluster mode's PollerControl, its entities and reconciler, and the push duties (they need PushDuties), on this runner. */
export const clusterPollerLayer = (c: VerifierOptions) =>
  Layer.mergeAll(ControlLive, PullAgentLive, Reconciler(c), PushDutiesSingleton(c)).pipe(
    Layer.provide(ClusterLoopsLive),
    Layer.provide(FleetRepo.Default),
    Layer.provide(runnerLayer(c))
  )
