/**
 * The pull loop of a verifier process (issue 9 §3): a `FiberMap` keyed by agent id, one supervised
 * fiber per active agent of this `verifier_id` running loop/agentLoop.ts. It implements the
 * `PollerControl` port the domain calls: `start` (re)starts an agent's loop from its row, `stop`
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
 *                           that shares its PolicyCache with the API).
 */
import { SqlClient } from "@effect/sql"
import { Cause, Effect, Either, FiberMap, Layer, Option } from "effect"
import { VerifierConfig } from "../../config/services.js"
import { nowSeconds } from "../../db/dialect.js"
import { AgentClient, AgentClientLive } from "./AgentClient.js"
import type { VerifierClientTls } from "./ClientTls.js"
import { severityOf, severityPolicyFromOptions } from "../../attestation/evaluate/severity.js"
import { runAgentLoop, type LoopDeps } from "./agentLoop.js"
import type { MachineConfig } from "./machine.js"
import { Notifications } from "../domain/notify/Notifications.js"
import { NotifiersLive } from "./NotifiersLive.js"
import { PollerControl } from "../domain/PollerControl.js"
import { PolicyCache } from "../domain/policy/PolicyCache.js"
import { PushRepo } from "../domain/pushStore/repo.js"
import { AgentRepo } from "../domain/repo/AgentRepo.js"
import { NotificationOutbox } from "../domain/repo/NotificationOutbox.js"
import { MbPolicyRepo, RuntimePolicyRepo } from "../domain/repo/PolicyRepo.js"
import { removeAgentAndOwnPolicies } from "../domain/repo/removeAgent.js"
import { compileSettingsOf } from "../domain/policy/storedPolicies.js"

/** Used when an agent row has no `supported_version` (every attest and rust-keylime agent serves it). */
export const DEFAULT_AGENT_API_VERSION = "2.2"

/** A loop that dies of a defect is started again after this long (it reads its row again). */
const RESTART_AFTER_MS = 5_000

/** How often the list of this verifier's active agents is compared with the loops that run. */
const RECONCILE_EVERY_MS = 15_000

/**
 * How long past its next poll an agent's loop may still be at work (a quote asked up to three
 * times within request_timeout, judged, written) before the agent counts as nobody's.
 */
export const orphanAfterSeconds = (o: { readonly request_timeout: number; readonly quote_interval: number }) =>
  3 * o.request_timeout + o.quote_interval + 30

export const pollerLayer: Layer.Layer<
  PollerControl,
  never,
  VerifierConfig | SqlClient.SqlClient | AgentRepo | RuntimePolicyRepo | MbPolicyRepo | PushRepo | PolicyCache | AgentClient | Notifications
> = Layer.scoped(
  PollerControl,
  Effect.gen(function*() {
    const config = yield* VerifierConfig
    const sql = yield* SqlClient.SqlClient
    const agents = yield* AgentRepo
    const pushes = yield* PushRepo
    const runtimePolicies = yield* RuntimePolicyRepo
    const mbPolicies = yield* MbPolicyRepo
    const severity = severityPolicyFromOptions(config)
    // the verifier's start-up checks the severity options; a bad one here falls back to Keylime's default
    if (Either.isLeft(severity)) yield* Effect.logError(`${severity.left.message}; every failure is the highest severity`)
    const policy = Either.getOrElse(severity, () => Either.getOrThrow(severityPolicyFromOptions({ severity_labels: config.severity_labels, severity_policy: "[]" })))
    const machine: MachineConfig = {
      quoteInterval: config.quote_interval,
      retryInterval: config.retry_interval,
      exponentialBackoff: config.exponential_backoff,
      maxRetries: config.max_retries,
      severityOf: (eventId) => severityOf(policy, eventId).level,
      maxSeverity: policy.max.level
    }
    const deps: LoopDeps = {
      agents,
      runtimePolicies,
      mbPolicies,
      cache: yield* PolicyCache,
      client: yield* AgentClient,
      notifications: yield* Notifications,
      machine,
      settings: compileSettingsOf(config, policy, "pull"),
      removeAgent: (agentId) => removeAgentAndOwnPolicies({ sql, agents, runtimePolicies, mbPolicies }, agentId),
      isPushAgent: (agentId) => Effect.map(pushes.findPushAgent(agentId), Option.isSome),
      defaultApiVersion: DEFAULT_AGENT_API_VERSION,
      verifierId: config.verifier_id,
      storeRetrySeconds: Math.max(1, config.retry_interval)
    }

    const loops = yield* FiberMap.make<string>()

    // without an OTLP exporter nobody reads the loop's spans: not making them is about a third of
    // the CPU of a quote request (issue 13: no exporter, no cost)
    const traced = config.otlp_endpoint.trim() !== ""

    const supervised = (agentId: string): Effect.Effect<void> =>
      runAgentLoop(deps, agentId).pipe(
        Effect.withTracerEnabled(traced),
        Effect.catchAllCause((cause) =>
          Cause.isInterruptedOnly(cause)
            ? Effect.failCause(cause as Cause.Cause<never>)
            : Effect.logError("agent loop died; restarting it", cause).pipe(
              Effect.zipRight(Effect.sleep(RESTART_AFTER_MS)),
              Effect.zipRight(Effect.suspend(() => supervised(agentId)))
            )
        ),
        Effect.annotateLogs("agent_id", agentId)
      )

    const control = PollerControl.of({
      start: (agentId) => FiberMap.run(loops, agentId, supervised(agentId)).pipe(Effect.asVoid),
      stop: (agentId) => Effect.zipRight(FiberMap.remove(loops, agentId), deps.client.release(agentId)),
      isOwned: (agentId) => FiberMap.has(loops, agentId)
    })

    // resume: this verifier's active agents, each from its row; finish the deletions accepted earlier
    const resume = Effect.gen(function*() {
      for (const agentId of yield* agents.terminatedOf(config.verifier_id)) {
        yield* deps.removeAgent(agentId)
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

const repositories = Layer.mergeAll(AgentRepo.Default, RuntimePolicyRepo.Default, MbPolicyRepo.Default, PushRepo.Default, NotificationOutbox.Default, PolicyCache.Default)

/** The poller over the given AgentClient (tests decorate the live one to see what is asked). */
export const pollerWithClient = <R>(client: Layer.Layer<AgentClient, never, R>) =>
  pollerLayer.pipe(
    Layer.provide(NotifiersLive.pipe(Layer.provideMerge(client))),
    Layer.provide(repositories)
  )

/** The poller with everything it needs but the config, the database and the client TLS identity. */
export const PollerLive: Layer.Layer<PollerControl, never, VerifierConfig | SqlClient.SqlClient | VerifierClientTls> = pollerWithClient(AgentClientLive)
