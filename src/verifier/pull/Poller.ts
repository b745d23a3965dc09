/**
 * The pull loop of a verifier process (issue 9 §3): a `FiberMap` keyed by agent id, one supervised
 * fiber per active agent of this `verifier_id` running the AgentLoop service (agentLoop.ts).
 * It implements the `PollerControl` port the domain calls: `start` (re)starts an agent's loop from its row, `stop`
 * cancels it at once, `isOwned` says whether this process polls it. At start it resumes every agent
 * in an active state with its IMA progress (the row's evaluation_state) and deletes the agents of
 * this verifier left TERMINATED; from then on it reconciles that list periodically: an active agent
 * of this verifier whose next poll is long overdue has no live loop anywhere (its process died) and
 * gets one here. Each loop takes the agent's owner epoch when it starts (AgentRepo.takeOwnership),
 * so whichever process started a loop last is the only one whose writes land.
 *
 *   PollerLive              PollerControl from VerifierConfig, SqlClient, VerifierClientTls (and
 *                           the default Clock); builds its repositories, PolicyCache, AgentClient
 *                           and notifiers itself.
 *   pollerLayer             the same over services in context (tests: another AgentClient; a server
 *                           that shares its PolicyCache with the API); it builds its AgentLoop.
 */
import type { SqlClient } from "@effect/sql"
import { Cause, Effect, FiberMap, Layer } from "effect"
import { VerifierConfig } from "../../config/services.js"
import { nowSeconds } from "../../db/dialect.js"
import { AgentClient, AgentClientLive } from "./AgentClient.js"
import type { VerifierClientTls } from "./ClientTls.js"
import { AgentLoop, type AgentLoopServices } from "./agentLoop.js"
import { NotifiersLive } from "./NotifiersLive.js"
import { PollerControl } from "../domain/PollerControl.js"
import { PolicyCache } from "../domain/policy/PolicyCache.js"
import { PushRepo } from "../domain/pushStore/repo.js"
import { AgentRepo } from "../domain/repo/AgentRepo.js"
import { NotificationOutbox } from "../domain/repo/NotificationOutbox.js"
import { MbPolicyRepo, RuntimePolicyRepo } from "../domain/repo/PolicyRepo.js"
import type { VerifierStoreError } from "../domain/errors.js"

/** A loop that dies of a defect or does not start is started again after this long (it reads its row again). */
const RESTART_AFTER_MS = 5_000

/** How often the list of this verifier's active agents is compared with the loops that run. */
const RECONCILE_EVERY_MS = 15_000

/**
 * How long past its next poll an agent's loop may still be at work (a quote asked up to three
 * times within request_timeout, judged, written) before the agent counts as nobody's.
 */
export const orphanAfterSeconds = (o: { readonly request_timeout: number; readonly quote_interval: number }) =>
  3 * o.request_timeout + o.quote_interval + 30

export interface AgentLoopRunner {
  /**
   * Runs the agent's loop (agentLoop.ts) until it ends; a loop that does not start or dies of a
   * defect is started again after a pause. `verifierId` is whose agents it polls: this verifier's,
   * or in cluster mode the agent's own.
   */
  readonly run: (agentId: string, verifierId?: string) => Effect.Effect<void>
  /** Closes the agent's connections (its loop was cancelled from outside). */
  readonly release: (agentId: string) => Effect.Effect<void>
  /** Removes a TERMINATED agent and the policies only it used. */
  readonly removeAgent: (agentId: string) => Effect.Effect<boolean, VerifierStoreError>
}

/**
 * One agent's loop as this process runs it: the seam between the loop and who decides which agents
 * run here (the FiberMap below; in cluster mode the agent's entity, pull/cluster/PullAgentEntity.ts).
 */
export const makeAgentLoopRunner: Effect.Effect<AgentLoopRunner, never, VerifierConfig | AgentClient | AgentLoop> = Effect.gen(function*() {
    const config = yield* VerifierConfig
    const client = yield* AgentClient
    const loop = yield* AgentLoop

    // without an OTLP exporter nobody reads the loop's spans: not making them is about a third of
    // the CPU of a quote request (issue 13: no exporter, no cost)
    const traced = config.otlp_endpoint.trim() !== ""

    const restart = (agentId: string, verifierId: string) =>
      Effect.zipRight(Effect.sleep(RESTART_AFTER_MS), Effect.suspend(() => supervised(agentId, verifierId)))
    const supervised = (agentId: string, verifierId: string): Effect.Effect<void> =>
      loop.run(agentId, verifierId).pipe(
        Effect.withTracerEnabled(traced),
        Effect.catchTag("AgentLoopNotStarted", (e) => Effect.zipRight(Effect.logWarning(`${e.message}; starting it again shortly`), restart(agentId, verifierId))),
        Effect.catchAllDefect((defect) => Effect.zipRight(Effect.logError("agent loop died; restarting it", Cause.die(defect)), restart(agentId, verifierId))),
        Effect.annotateLogs("agent_id", agentId)
      )

    return {
      run: (agentId, verifierId = config.verifier_id) => supervised(agentId, verifierId),
      release: client.release,
      removeAgent: loop.removeAgent
    }
  })

/** PollerControl over the AgentLoop in context: the fibers, the resume, the reconciler. */
const pollerOverLoop: Layer.Layer<PollerControl, never, VerifierConfig | AgentRepo | AgentClient | AgentLoop> = Layer.scoped(
  PollerControl,
  Effect.gen(function*() {
    const config = yield* VerifierConfig
    const agents = yield* AgentRepo
    const runner = yield* makeAgentLoopRunner
    const loops = yield* FiberMap.make<string>()

    const control = PollerControl.of({
      start: (agentId) => FiberMap.run(loops, agentId, runner.run(agentId)).pipe(Effect.asVoid),
      stop: (agentId) => Effect.zipRight(FiberMap.remove(loops, agentId), runner.release(agentId)),
      isOwned: (agentId) => FiberMap.has(loops, agentId)
    })

    // resume: this verifier's active agents, each from its row; finish the deletions accepted earlier
    const resume = Effect.gen(function*() {
      for (const agentId of yield* agents.terminatedOf(config.verifier_id)) {
        yield* runner.removeAgent(agentId)
        yield* Effect.logInfo(`agent ${agentId} deleted (TERMINATED before the restart)`)
      }
      const active = yield* agents.activeOf(config.verifier_id)
      for (const view of active) yield* control.start(view.agent_id)
      yield* Effect.logInfo(`poller: ${active.length} agent(s) of verifier '${config.verifier_id}' resumed`)
    }).pipe(Effect.catchAllCause((cause) => Effect.logError("poller: agents not resumed", cause)))
    yield* resume

    // agents whose loop died with its process (or was never started: its process died right
    // after the add) get a loop here; a loop running elsewhere keeps its next poll current
    const reconcile = Effect.gen(function*() {
      const staleBefore = (yield* nowSeconds) - orphanAfterSeconds(config)
      for (const agentId of yield* agents.orphansOf(config.verifier_id, staleBefore)) {
        if (yield* control.isOwned(agentId)) continue
        yield* Effect.logInfo(`agent ${agentId}: no loop polls it (next poll overdue); starting one`)
        yield* control.start(agentId)
      }
    }).pipe(Effect.catchAllCause((cause) => Effect.logWarning("poller: agents not reconciled", cause)))
    // an idle verifier's wake-ups: no spans for nobody (without an exporter)
    const traced = config.otlp_endpoint.trim() !== ""
    yield* Effect.forkScoped(Effect.forever(Effect.zipRight(Effect.sleep(RECONCILE_EVERY_MS), reconcile)).pipe(Effect.withTracerEnabled(traced)))
    return control
  }).pipe(Effect.withSpan("Poller.start"))
)

/** The poller with its AgentLoop, over the services in context (AgentClient among them). */
export const pollerLayer: Layer.Layer<PollerControl, never, AgentLoopServices> = pollerOverLoop.pipe(Layer.provide(AgentLoop.layer))

const repositories = Layer.mergeAll(AgentRepo.Default, RuntimePolicyRepo.Default, MbPolicyRepo.Default, PushRepo.Default, NotificationOutbox.Default, PolicyCache.Default)

/** A PollerControl over the loop's services: the notifiers over the given AgentClient, the repositories. */
export const withLoopServices = <E, RC, R>(control: Layer.Layer<PollerControl, E, AgentLoopServices | RC>, client: Layer.Layer<AgentClient, never, R>) =>
  control.pipe(
    Layer.provide(NotifiersLive.pipe(Layer.provideMerge(client))),
    Layer.provide(repositories)
  )

/** The poller over the given AgentClient (tests decorate the live one to see what is asked). */
export const pollerWithClient = <R>(client: Layer.Layer<AgentClient, never, R>) => withLoopServices(pollerLayer, client)

/** The poller with everything it needs but the config, the database and the client TLS identity. */
export const PollerLive: Layer.Layer<PollerControl, never, VerifierConfig | SqlClient.SqlClient | VerifierClientTls> = pollerWithClient(AgentClientLive)
