/**
 * The pull loop's writes: each through AgentRepo's generation protocol, fenced by the loop's owner
 * epoch, with the revocation notice it causes in the same transaction. The row writes go through the
 * process's LoopWriteBatcher (writeBatch.ts: on PostgreSQL many loops' writes share a transaction,
 * each with its own won/lost answer). A write that loses to an
 * admin change feeds the machine `Superseded` (it reads the row again); one lost to a newer loop
 * (here or in another process) ends this loop, so two loops never both write.
 */
import { SqlClient } from "@effect/sql"
import { Clock, Effect, Option } from "effect"
import { nowSeconds } from "../../db/dialect.js"
import { verdictFactsJson } from "../../ear/verdictFacts.js"
import { setAgentState, unsafeObserveFreshness, unsafeRecordAttestation, unsafeSetAgentState } from "../../ops/metrics.js"
import { AgentClient } from "./AgentClient.js"
import type { VerifierStoreError } from "../domain/errors.js"
import { encodeEvaluationState } from "../../attestation/evaluate/state.js"
import type { LoopEffect, LoopEvent } from "./machine.js"
import { Notifications, type RevocationRequest } from "../domain/notify/Notifications.js"
import type { LoopWriteBatcher } from "./writeBatch.js"
import { AgentRepo } from "../domain/repo/AgentRepo.js"
import { MbPolicyRepo, RuntimePolicyRepo } from "../domain/repo/PolicyRepo.js"
import { removeAgentAndOwnPolicies } from "../domain/repo/removeAgent.js"
import type { OperationalState } from "../../attestation/states.js"
import { crashPoint } from "../domain/testHooks.js"
import type { LoopStepError } from "./loopErrors.js"
import { fenceOf, type LoopMemory } from "./loopMemory.js"
import type { LoopSettings } from "./loopSettings.js"

export type NotifyEffect = Extract<LoopEffect, { readonly _tag: "Notify" }>
/** The machine's effects that write: the agent's row, a notice, the agent's removal. */
export type WriteEffect = Extract<LoopEffect, { readonly _tag: "PersistVerdict" | "PersistRetry" | "PersistFailed" | "PersistState" | "Notify" | "DeleteAgent" }>
/** What follows a write: the next event, "finish" (this loop ends), or undefined (the next effect). */
export type AfterWrite = LoopEvent | "finish" | undefined

export interface LoopWrites {
  /** Performs a write; `notify` is the `Notify` that follows a verdict or a failure, written in its transaction. */
  readonly write: (memory: LoopMemory, effect: WriteEffect, notify: NotifyEffect | undefined) => Effect.Effect<AfterWrite, LoopStepError>
  /** Removes a TERMINATED agent and the policies only it used (also the deletions a restart finds pending). */
  readonly removeAgent: (agentId: string) => Effect.Effect<boolean, VerifierStoreError>
}

export const makeLoopWrites = (settings: LoopSettings, batcher: LoopWriteBatcher) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const agents = yield* AgentRepo
    const runtimePolicies = yield* RuntimePolicyRepo
    const mbPolicies = yield* MbPolicyRepo
    const notifications = yield* Notifications
    const client = yield* AgentClient

    const removeAgent = (agentId: string) => removeAgentAndOwnPolicies({ sql, agents, runtimePolicies, mbPolicies }, agentId)

    /**
     * After a lost write: what the row says now (a deleted row ends the loop as TERMINATED would). A
     * newer owner epoch means another loop (here or in another process) polls the agent now: this
     * one ends without reading the row again, so two loops never both write.
     */
    const superseded = (m: LoopMemory) =>
      Effect.flatMap(agents.ownership(m.agentId), (row): Effect.Effect<LoopEvent | "finish"> => {
        if (Option.isNone(row)) return Effect.succeed({ _tag: "Superseded", storedState: 8 })
        if (row.value.ownerEpoch !== m.epoch) {
          return Effect.as(
            Effect.logWarning(`agent ${m.agentId}: a newer loop owns it (owner epoch ${row.value.ownerEpoch}, this loop's ${m.epoch}); this loop ends`).pipe(
              Effect.zipRight(client.release(m.agentId))
            ),
            "finish" as const
          )
        }
        return Effect.succeed({ _tag: "Superseded", storedState: row.value.operationalState })
      })

    const won = (m: LoopMemory, ok: boolean, state: OperationalState) =>
      ok ? Effect.as(setAgentState(m.agentId, state), undefined) : superseded(m)

    const at = (after: number | null | undefined) =>
      after === undefined ? Effect.succeed(undefined) : after === null ? Effect.succeed(null) : Effect.map(nowSeconds, (now) => now + after)

    /** The revocation message a `Notify` asks for, about the quote just judged (or the event alone). */
    const revocationOf = (m: LoopMemory, notify: NotifyEffect): RevocationRequest => {
      const h = m.judged?.evaluation.severity.highest
      const context = notify.kind === "revocation" && h !== undefined
        ? h.failure.context
        : { message: `agent ${m.agentId}: ${notify.event.eventId}` }
      return { agent: m.view, kind: notify.kind, event: notify.event, context }
    }

    /** A write, with the notice that follows it in the same transaction when there is one: whether it won. */
    const withNotice = (m: LoopMemory, notify: NotifyEffect | undefined, write: Effect.Effect<boolean, VerifierStoreError>) => {
      // the common case (no notice, writes not batched): the write alone, no generator around it
      if (notify === undefined && !batcher.batched) return Effect.map(batcher.submit({ agentId: m.agentId, write }), (r) => r.won)
      return Effect.gen(function*() {
        const notice = notify === undefined ? undefined : yield* notifications.revocationNotice(revocationOf(m, notify))
        const submitted = batcher.batched ? yield* Clock.currentTimeMillis : 0
        const { won, dropped } = yield* batcher.submit({ agentId: m.agentId, write, notice })
        // the wait for the batch comes out of the next sleep: batching does not stretch the quote interval
        if (batcher.batched) m.batchWaitMs = (yield* Clock.currentTimeMillis) - submitted
        if (won && notice !== undefined) yield* notice.stored(dropped)
        return won
      })
    }

    const persistVerdict = (m: LoopMemory, effect: Extract<WriteEffect, { _tag: "PersistVerdict" }>, notify: NotifyEffect | undefined) =>
      Effect.gen(function*() {
        const judged = m.judged
        if (judged === undefined) {
          const crashed: LoopEvent = { _tag: "Crashed", message: "a verdict to persist without a judged quote" }
          return crashed
        }
        const next = judged.evaluation.nextState
        const ok = yield* withNotice(m, notify, agents.recordVerdict(m.agentId, fenceOf(m), {
          operationalState: effect.operationalState,
          valid: effect.valid,
          receivedAt: judged.receivedAt,
          event: effect.event === undefined ? undefined : { ...effect.event, message: judged.evaluation.severity.highest?.failure.context.message },
          evaluationState: encodeEvaluationState(next),
          algorithms: next.alg.hash === "" ? undefined : { hashAlg: next.alg.hash, encAlg: next.alg.enc, signAlg: next.alg.sign },
          vDelivered: m.state.vDelivered,
          nextPollAt: effect.nextPollAfter === null ? null : (yield* nowSeconds) + effect.nextPollAfter,
          policyChecksums: { runtime: m.view.runtime_policy_checksum, mb: m.view.mb_policy_checksum },
          // what its EAR is signed from when a relying party asks (src/verifier/pullEar.ts)
          lastVerdict: verdictFactsJson(judged.evaluation, judged.nonce, judged.receivedAt)
        }))
        if (!ok) return yield* superseded(m)
        m.prior = next
        if (effect.valid) {
          // the common case's three metrics in one step (each its own Effect was a measurable part of a cycle)
          yield* Effect.sync(() => {
            unsafeRecordAttestation("pull", true)
            unsafeObserveFreshness(m.agentId, judged.receivedAt)
            unsafeSetAgentState(m.agentId, effect.operationalState)
          })
          return undefined
        }
        yield* crashPoint("after-invalid-verdict")
        yield* Effect.sync(() => unsafeRecordAttestation("pull", false, judged.evaluation.failures.map((f) => f.type)))
        const h = judged.evaluation.severity.highest
        yield* Effect.logWarning(`attestation failed: ${h?.failure.type ?? "?"}: ${h?.failure.context.message ?? ""}`)
        return yield* won(m, true, effect.operationalState)
      })

    const write = (m: LoopMemory, effect: WriteEffect, notify: NotifyEffect | undefined): Effect.Effect<AfterWrite, LoopStepError> => {
      switch (effect._tag) {
        case "PersistVerdict":
          return persistVerdict(m, effect, notify)
        case "PersistRetry":
          return Effect.gen(function*() {
            yield* Effect.logInfo(`agent not reachable; retry ${effect.retryCount}/${settings.machine.maxRetries} in ${effect.after} s`)
            const ok = yield* withNotice(m, undefined, agents.recordRetry(m.agentId, fenceOf(m), {
              operationalState: effect.operationalState,
              retryCount: effect.retryCount,
              nextPollAt: (yield* nowSeconds) + effect.after
            }))
            return yield* won(m, ok, effect.operationalState)
          })
        case "PersistFailed":
          return Effect.gen(function*() {
            yield* Effect.logWarning(`agent FAILED: ${effect.event.eventId}`)
            return yield* won(m, yield* withNotice(m, notify, agents.markFailed(m.agentId, fenceOf(m), { event: effect.event })), 7)
          })
        case "PersistState":
          return Effect.gen(function*() {
            const ok = yield* withNotice(m, undefined, agents.setState(m.agentId, fenceOf(m), {
              operationalState: effect.operationalState,
              vDelivered: effect.vDelivered,
              retryCount: effect.retryCount,
              nextPollAt: yield* at(effect.nextPollAfter)
            }))
            return yield* won(m, ok, effect.operationalState)
          })
        case "Notify":
          // a Notify on its own (the machine puts one after a verdict or a failure, written with it)
          return Effect.as(notifications.revocation(revocationOf(m, effect)), undefined)
        case "DeleteAgent":
          return Effect.gen(function*() {
            yield* removeAgent(m.agentId)
            yield* client.release(m.agentId)
            yield* Effect.logInfo("agent deleted (it was TERMINATED)")
            return undefined
          })
      }
    }

    return { write, removeAgent } satisfies LoopWrites
  })
