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
import { AgentLoop } from "./agentLoop.js"
import type { Notifications } from "../domain/notify/Notifications.js"
import { NotifiersLive } from "./NotifiersLive.js"
import { PollerControl } from "../domain/PollerControl.js"
import { PolicyCache } from "../domain/policy/PolicyCache.js"
import { PushRepo } from "../domain/pushStore/repo.js"
import { AgentRepo } from "../domain/repo/AgentRepo.js"
import { NotificationOutbox } from "../domain/repo/NotificationOutbox.js"
import { MbPolicyRepo, RuntimePolicyRepo } from "../domain/repo/PolicyRepo.js"

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

/** PollerControl over the AgentLoop in context: the fibers, the resume, the reconciler. */
const pollerOverLoop: Layer.Layer<PollerControl, never, VerifierConfig | AgentRepo | AgentClient | AgentLoop> = Layer.scoped(
  PollerControl,
  Effect.gen(function*() {
    const config = yield* VerifierConfig
    const agents = yield* AgentRepo
    const client = yield* AgentClient
    const loop = yield* AgentLoop

    const loops = yield* FiberMap.make<string>()

    // without an OTLP exporter nobody reads the loop's spans: not making them is about a third of
    // the CPU of a quote request (issue 13: no exporter, no cost)
    const traced = config.otlp_endpoint.trim() !== ""

    const restart = (agentId: string) => Effect.zipRight(Effect.sleep(RESTART_AFTER_MS), Effect.suspend(() => supervised(agentId)))
    const supervised = (agentId: string): Effect.Effect<void> =>
      loop.run(agentId).pipe(
        Effect.withTracerEnabled(traced),
        Effect.catchTag("AgentLoopNotStarted", (e) => Effect.zipRight(Effect.logWarning(`${e.message}; starting it again shortly`), restart(agentId))),
        Effect.catchAllDefect((defect) => Effect.zipRight(Effect.logError("agent loop died; restarting it", Cause.die(defect)), restart(agentId))),
        Effect.annotateLogs("agent_id", agentId)
      )

    const control = PollerControl.of({
      start: (agentId) => FiberMap.run(loops, agentId, supervised(agentId)).pipe(Effect.asVoid),
      stop: (agentId) => Effect.zipRight(FiberMap.remove(loops, agentId), client.release(agentId)),
      isOwned: (agentId) => FiberMap.has(loops, agentId)
    })

    // resume: this verifier's active agents, each from its row; finish the deletions accepted earlier
    const resume = Effect.gen(function*() {
      for (const agentId of yield* agents.terminatedOf(config.verifier_id)) {
        yield* loop.removeAgent(agentId)
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
    yield* Effect.forkScoped(Effect.forever(Effect.zipRight(Effect.sleep(RECONCILE_EVERY_MS), reconcile)))
    return control
  }).pipe(Effect.withSpan("Poller.start"))
)

/** The poller with its AgentLoop, over the services in context (AgentClient among them). */
export const pollerLayer: Layer.Layer<
  PollerControl,
  never,
  VerifierConfig | SqlClient.SqlClient | AgentRepo | RuntimePolicyRepo | MbPolicyRepo | PushRepo | PolicyCache | AgentClient | Notifications
> = pollerOverLoop.pipe(Layer.provide(AgentLoop.layer))

const repositories = Layer.mergeAll(AgentRepo.Default, RuntimePolicyRepo.Default, MbPolicyRepo.Default, PushRepo.Default, NotificationOutbox.Default, PolicyCache.Default)

/** The poller over the given AgentClient (tests decorate the live one to see what is asked). */
export const pollerWithClient = <R>(client: Layer.Layer<AgentClient, never, R>) =>
  pollerLayer.pipe(
    Layer.provide(NotifiersLive.pipe(Layer.provideMerge(client))),
    Layer.provide(repositories)
  )

/** The poller with everything it needs but the config, the database and the client TLS identity. */
export const PollerLive: Layer.Layer<PollerControl, never, VerifierConfig | SqlClient.SqlClient | VerifierClientTls> = pollerWithClient(AgentClientLive)
