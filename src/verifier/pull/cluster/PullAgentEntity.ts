/**
 * Cluster mode (issue 24): each pull agent's loop is an @effect/cluster entity keyed by the agent id,
 * so exactly one runner hosts it at a time and a dead runner's agents start again on the others. The
 * entity runs the same loop the single-process Poller forks (AgentLoopRunner, Poller.ts), which takes
 * the agent's owner epoch when it starts: every write of a loop that lost the agent to a newer one
 * loses, so an at-least-once message or a brief overlap during a shard move never writes twice.
 *
 * While its loop runs the entity keeps itself alive (`Entity.keepAlive`: a persisted message the
 * engine delivers again to whichever runner takes the shard, which is how a loop survives its
 * runner). The loop ending by itself (FAILED, stopped, deleted, taken by a newer loop) lets the
 * entity idle out.
 *
 *   Ensure   the reconciler: a loop if none runs here (idempotent; not persisted, it is repeated)
 *   Restart  the domain's start (add, reactivate): the loop again from the agent's row (persisted)
 *   Stop     the domain's stop and delete: the loop cancelled, the entity free to idle out (persisted)
 */
import { ClusterSchema, Entity, type Sharding } from "@effect/cluster"
import { Rpc } from "@effect/rpc"
import { Cause, Context, Effect, Exit, FiberHandle, Option, Schedule } from "effect"
import type { AgentLoopRunner } from "../Poller.js"
import type { AgentRepo } from "../../domain/repo/AgentRepo.js"

export const PullAgent = Entity.make("PullAgent", [
  Rpc.make("Ensure"),
  Rpc.make("Restart").annotate(ClusterSchema.Persisted, true),
  Rpc.make("Stop").annotate(ClusterSchema.Persisted, true)
])

/** What this runner's entities share: the loop, the agents' rows, and which agents' loops run here. */
export interface ClusterLoopsShape {
  readonly runner: AgentLoopRunner
  readonly agents: AgentRepo
  /** Agents whose loop runs in this process (PollerControl.isOwned). */
  readonly running: Set<string>
}

export class ClusterLoops extends Context.Tag("attest/verifier/pull/cluster/ClusterLoops")<ClusterLoops, ClusterLoopsShape>() {}

/** An entity with no message for this long, and no loop keeping it alive, is stopped. */
const MAX_IDLE = "1 minute"
/** Between reads of the agent's row when the database did not answer. */
const READ_RETRY = "2 seconds"

export const PullAgentLive = PullAgent.toLayer(
  Effect.gen(function*() {
    const address = yield* Entity.CurrentAddress
    const agentId = address.entityId
    const { agents, running, runner } = yield* ClusterLoops
    // handlers do not see the build's context (the keep-alive latch among it): captured here
    const context = yield* Effect.context<Sharding.Sharding | Entity.CurrentAddress>()
    const keepAlive = (on: boolean) => Effect.provide(Entity.keepAlive(on), context)
    const loop = yield* FiberHandle.make<void, never>()
    yield* Effect.addFinalizer(() => Effect.sync(() => running.delete(agentId)))

    // the agent's own verifier_id: in cluster mode any runner polls any agent. A database that
    // does not answer is waited out, as the loop itself does
    const runOnce = Effect.gen(function*() {
      // retried for as long as it fails (orDie only closes the type: it never gives up)
      const row = yield* agents.find(agentId).pipe(Effect.retry(Schedule.spaced(READ_RETRY)), Effect.orDie)
      if (Option.isNone(row)) return
      yield* runner.run(agentId, row.value.verifier_id)
    })
    const start = (onlyIfMissing: boolean) =>
      Effect.gen(function*() {
        if (onlyIfMissing && running.has(agentId)) return
        running.add(agentId)
        yield* keepAlive(true)
        yield* FiberHandle.run(
          loop,
          runOnce.pipe(
            Effect.onExit((exit) =>
              // replaced by a Restart or cancelled by a Stop: the one that replaced or stopped it says what runs
              Exit.isFailure(exit) && Cause.isInterruptedOnly(exit.cause)
                ? Effect.void
                : Effect.zipRight(Effect.sync(() => running.delete(agentId)), keepAlive(false))
            )
          ),
          { onlyIfMissing }
        )
      })

    yield* start(false)
    return PullAgent.of({
      Ensure: () => start(true),
      Restart: () => start(false),
      Stop: () =>
        Effect.gen(function*() {
          running.delete(agentId)
          yield* FiberHandle.clear(loop)
          yield* runner.release(agentId)
          yield* keepAlive(false)
        })
    })
  }),
  { maxIdleTime: MAX_IDLE }
)
