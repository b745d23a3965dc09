/**
 * The pull loop as a service: `AgentLoop.run(agentId)` runs one agent's `machine.step` and performs
 * its effects in order — the quote round (quoteRound.ts: ask for a quote, judge it, deliver
 * V), the writes (loopWrites.ts: AgentRepo's generation protocol fenced by the owner epoch the
 * loop takes when it starts, notices in the verdict's transaction), waits with `Effect.sleep`
 * (Clock, so TestClock drives it). Its layer reads the services it needs from context and derives
 * its settings from VerifierConfig once. Every log line carries the agent id. A database that does
 * not answer is waited out (the row is read again), never a verdict; a configuration the verifier
 * cannot honour and a defect inside a cycle are the machine's `Crashed`. A loop that cannot start
 * fails with AgentLoopNotStarted; the poller (Poller.ts) starts it again.
 */
import type { SqlClient } from "@effect/sql"
import { Cause, Clock, Context, Effect, Layer, Option } from "effect"
import { VerifierConfig } from "../../config/services.js"
import type { AgentConfigUnusable } from "../../attestation/AgentConfigUnusable.js"
import { setAgentState } from "../../ops/metrics.js"
import { AgentClient } from "./AgentClient.js"
import type { VerifierStoreError } from "../domain/errors.js"
import { type LoopEffect, type LoopEvent, step } from "./machine.js"
import type { Notifications } from "../domain/notify/Notifications.js"
import type { PolicyCache } from "../domain/policy/PolicyCache.js"
import { AgentLoopNotStarted, type LoopStepError, notStarted } from "./loopErrors.js"
import { type LoopMemory, memoryOf } from "./loopMemory.js"
import { loopSettingsOf } from "./loopSettings.js"
import { type AfterWrite, makeLoopWrites, type NotifyEffect } from "./loopWrites.js"
import { makeQuoteRound } from "./quoteRound.js"
import { makeLoopWriteBatcher } from "./writeBatch.js"
import { PushRepo } from "../domain/pushStore/repo.js"
import { AgentRepo } from "../domain/repo/AgentRepo.js"
import type { MbPolicyRepo, RuntimePolicyRepo } from "../domain/repo/PolicyRepo.js"
import { stateName } from "../../attestation/states.js"

export { AgentLoopNotStarted }

export interface AgentLoopShape {
  /**
   * Polls the agent until its loop finishes (FAILED, stopped, deleted, not this verifier's, taken
   * by a newer loop). Fails only when it cannot start: the database did not answer. `verifierId`
   * is whose agents it polls: this verifier's by default, the agent's own in cluster mode.
   */
  readonly run: (agentId: string, verifierId?: string) => Effect.Effect<void, AgentLoopNotStarted>
  /** Removes a TERMINATED agent and the policies only it used (the deletions a restart finds pending). */
  readonly removeAgent: (agentId: string) => Effect.Effect<boolean, VerifierStoreError>
}

/** What the loop's layer reads from context. */
export type AgentLoopServices =
  | VerifierConfig
  | SqlClient.SqlClient
  | AgentRepo
  | RuntimePolicyRepo
  | MbPolicyRepo
  | PushRepo
  | PolicyCache
  | AgentClient
  | Notifications

/** What a performed effect leads to: as a write's, or "store" (the database failed: read the row again later). */
type Next = AfterWrite | "store"

const TICK: LoopEvent = { _tag: "Tick" }
const BEGIN: LoopEvent = { _tag: "Begin" }

const make = Effect.gen(function*() {
  const verifier = yield* VerifierConfig
  const settings = yield* loopSettingsOf(verifier)
  // written beside the owner epoch: which runner polls the agent (cluster mode; its engine address)
  const runnerName = verifier.cluster ? `${verifier.cluster_runner_host}:${verifier.cluster_runner_port}` : null
  const agents = yield* AgentRepo
  const pushes = yield* PushRepo
  const client = yield* AgentClient
  const round = yield* makeQuoteRound(settings)
  // one batcher for every loop of this process (their writes share transactions on PostgreSQL)
  const writes = yield* makeLoopWrites(settings, yield* makeLoopWriteBatcher)

  /** Performs one effect; returns the next event, "finish", or undefined to go on with the next effect. */
  const perform = (m: LoopMemory, effect: LoopEffect, notify: NotifyEffect | undefined): Effect.Effect<AfterWrite, LoopStepError> => {
    switch (effect._tag) {
      case "RequestQuote":
        return round.fetchAndJudge(m, effect)
      case "DeliverV":
        return round.deliverV(m)
      case "ScheduleNext": {
        // less the time the last write waited for its batch (loopWrites.ts), so the interval holds
        const wait = Math.max(0, effect.after * 1000 - m.batchWaitMs)
        m.batchWaitMs = 0
        return Effect.as(Effect.sleep(wait), TICK)
      }
      case "Reload":
        return Effect.map(agents.findView(m.agentId), (view) => {
          if (Option.isNone(view)) return "finish" as const
          Object.assign(m, memoryOf(view.value, m.epoch))
          return BEGIN
        })
      case "Finish":
        return Effect.gen(function*() {
          yield* Effect.logInfo(`polling ends (${effect.reason}); state ${stateName[m.state.operationalState]}`)
          if (effect.reason !== "deleted") yield* client.release(m.agentId)
          return "finish" as const
        })
      default:
        return writes.write(m, effect, notify)
    }
  }

  /** A step's failure by its kind: the database is waited out; a configuration not honoured is `Crashed`. */
  const onStepError = {
    VerifierStoreError: (e: VerifierStoreError) => Effect.as(Effect.logWarning(`database: ${e.message}; reading the agent again shortly`), "store" as const),
    AgentConfigUnusable: (e: AgentConfigUnusable) =>
      Effect.as(Effect.logWarning(`configuration not honoured: ${e.message}`), { _tag: "Crashed", message: e.message } satisfies LoopEvent)
  }
  /** A defect inside a cycle is `Crashed` too: the agent FAILED, the loop goes on as the machine says. */
  const onDefect = (defect: unknown) => {
    const crashed: LoopEvent = { _tag: "Crashed", message: defect instanceof Error ? defect.message : String(defect) }
    return Effect.as(Effect.logError("cycle crashed", Cause.die(defect)), crashed)
  }
  /**
   * A step's effects in order, until one leads somewhere (an event, "finish"); a verdict or a
   * failure and the notice it causes are one transaction. Guarded once per step, not per effect.
   */
  const performAll = (m: LoopMemory, effects: ReadonlyArray<LoopEffect>): Effect.Effect<AfterWrite, LoopStepError> =>
    Effect.gen(function*() {
      for (let i = 0; i < effects.length; i++) {
        const effect = effects[i]!
        const following = effects[i + 1]
        const notify = (effect._tag === "PersistVerdict" || effect._tag === "PersistFailed") && following?._tag === "Notify" ? following : undefined
        const next = yield* perform(m, effect, notify)
        if (next !== undefined) return next
        if (notify !== undefined) i++
      }
      return undefined
    })
  const guarded = (m: LoopMemory, effects: ReadonlyArray<LoopEffect>): Effect.Effect<Next> =>
    performAll(m, effects).pipe(Effect.catchTags(onStepError), Effect.catchAllDefect(onDefect))

  const run = (agentId: string, verifierId = settings.verifierId) =>
    Effect.gen(function*() {
      const first = yield* Effect.mapError(agents.findView(agentId), notStarted(agentId))
      if (Option.isNone(first) || first.value.verifier_id !== verifierId) return
      // every start of a loop passes here (add, reactivate, a changed configuration, restart)
      if (Option.isSome(yield* Effect.mapError(pushes.findPushAgent(agentId), notStarted(agentId)))) {
        yield* Effect.logInfo("not polled: the agent is attested by push")
        return
      }
      // the fencing token: from here on a loop started later (any process) wins every write
      const epoch = yield* Effect.mapError(agents.takeOwnership(agentId, verifierId, runnerName), notStarted(agentId))
      if (Option.isNone(epoch)) return
      yield* Effect.logDebug(`polling starts (owner epoch ${epoch.value})`)
      const m = memoryOf(first.value, epoch.value)
      yield* setAgentState(agentId, m.state.operationalState)
      // resuming: an agent whose next poll is due later waits for it (no herd of quotes at start-up)
      const nextPollAt = first.value.next_poll_at
      if (nextPollAt !== null) {
        const wait = nextPollAt - Math.floor((yield* Clock.currentTimeMillis) / 1000)
        if (wait > 0) yield* Effect.sleep(Math.min(wait, 3600) * 1000)
      }
      let event: LoopEvent = BEGIN
      for (;;) {
        const { effects, state } = step(m.state, event, settings.machine)
        m.state = state
        const next = yield* guarded(m, effects)
        if (next === "finish" || next === undefined) return
        if (next === "store") {
          yield* Effect.sleep(settings.storeRetrySeconds * 1000)
          const view = yield* Effect.option(agents.findView(agentId))
          if (Option.isSome(view) && Option.isNone(view.value)) return
          if (Option.isSome(view) && Option.isSome(view.value)) Object.assign(m, memoryOf(view.value.value, m.epoch))
          event = BEGIN
          continue
        }
        event = next
      }
    }).pipe(Effect.annotateLogs("agent_id", agentId))

  return AgentLoop.of({ run, removeAgent: writes.removeAgent })
})

export class AgentLoop extends Context.Tag("attest/verifier/AgentLoop")<AgentLoop, AgentLoopShape>() {
  /** The loop over the services in context (AgentClient among them: tests and harnesses swap it). */
  static readonly layer: Layer.Layer<AgentLoop, never, AgentLoopServices> = Layer.scoped(AgentLoop, make)
}
