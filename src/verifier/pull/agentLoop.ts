/**
 * One agent's pull loop: runs `machine.step` and performs its effects in order — ask for a quote
 * and judge it with `evaluateEvidence`, deliver V, persist through AgentRepo's generation protocol
 * (a write that loses to an admin change feeds `Superseded`) fenced by the owner epoch the loop
 * takes when it starts (a write lost to a newer loop, in this process or another, ends this one),
 * queue notifications, wait with
 * `Effect.sleep` (Clock, so TestClock drives it). Each quote cycle is a span; every log line carries
 * the agent id. A database that does not answer is waited out (the row is read again), never a
 * verdict; a defect inside a cycle is the machine's `Crashed`.
 */
import { Cause, Clock, Effect, Either, Option } from "effect"
import type { IntegrityQuote } from "../../../schemas/Agent.js"
import { nowSeconds } from "../../db/dialect.js"
import { verdictFactsJson } from "../../ear/verdictFacts.js"
import { encryptForAgent } from "../../keys/nk.js"
import { observeFreshness, recordAttestation, setAgentState } from "../../ops/metrics.js"
import { evaluateTimed, stagesOf } from "../../ops/stages.js"
import { fromBase64 } from "../../tpm/bytes.js"
import { type AgentClientShape, type AgentRequestFailed, type AgentTarget, newNonce } from "./AgentClient.js"
import { evaluateEvidence } from "../../attestation/evaluate/evaluate.js"
import { decodeEvaluationState, encodeEvaluationState, type EvaluationState, initialEvaluationState } from "../../attestation/evaluate/state.js"
import type { Evaluation } from "../../attestation/evaluate/types.js"
import { type LoopEffect, type LoopEvent, type LoopState, loopStateOf, type MachineConfig, step, type Verdict } from "./machine.js"
import type { NotificationsShape, RevocationRequest } from "../domain/notify/Notifications.js"
import type { PolicyCache } from "../domain/policy/PolicyCache.js"
import type { AgentRepo } from "../domain/repo/AgentRepo.js"
import type { MbPolicyRepo, RuntimePolicyRepo } from "../domain/repo/PolicyRepo.js"
import type { AgentView } from "../domain/repo/rows.js"
import { type OperationalState, stateName } from "../../attestation/states.js"
import type { CompileSettings } from "../../attestation/compileAgentPolicy.js"
import { type CompiledAgent, compilePullAgent, policyKey } from "./agentPolicy.js"
import { crashPoint } from "../domain/testHooks.js"

type NotifyEffect = Extract<LoopEffect, { readonly _tag: "Notify" }>

export interface LoopDeps {
  readonly agents: AgentRepo
  readonly runtimePolicies: RuntimePolicyRepo
  readonly mbPolicies: MbPolicyRepo
  readonly cache: PolicyCache
  readonly client: AgentClientShape
  readonly notifications: NotificationsShape
  readonly machine: MachineConfig
  readonly settings: CompileSettings
  /** Removes a TERMINATED agent and the policies only it used. */
  readonly removeAgent: (agentId: string) => Effect.Effect<void, unknown>
  /** Whether the agent is attested by push (API 3.0): such an agent is never polled. */
  readonly isPushAgent: (agentId: string) => Effect.Effect<boolean, unknown>
  /** API version used when the row has no `supported_version`. */
  readonly defaultApiVersion: string
  /** This verifier's `verifier_id`: it polls only its own agents. */
  readonly verifierId: string
  /** Seconds to wait before reading the row again after the database failed. */
  readonly storeRetrySeconds: number
}

/** The loop's working memory: the row it acts for, the generation it read, its owner epoch, the evaluator's state. */
interface Ctx {
  view: AgentView
  generation: number
  /** Taken when the loop started; every write is conditional on it. */
  readonly epoch: number
  state: LoopState
  prior: EvaluationState
  compiled: CompiledAgent | undefined
  /** The last judged quote, for PersistVerdict and Notify. */
  judged: { readonly evaluation: Evaluation; readonly receivedAt: number; readonly nonce: string } | undefined
}

const priorOf = (view: AgentView): EvaluationState => {
  if (view.evaluation_state === null) return initialEvaluationState
  const decoded = decodeEvaluationState(view.evaluation_state)
  // a state that does not decode (written by another version): start over from entry 0
  return Either.isRight(decoded) ? decoded.right : initialEvaluationState
}

const ctxOf = (view: AgentView, epoch: number): Ctx => {
  const prior = priorOf(view)
  return {
    view,
    generation: view.generation,
    epoch,
    prior,
    state: loopStateOf(view, { pubkeyKnown: prior.nk !== null, imaEntry: prior.ima.nextEntry }),
    compiled: undefined,
    judged: undefined
  }
}

const targetOf = (v: AgentView, defaultVersion: string): AgentTarget => ({
  agentId: v.agent_id,
  ip: v.ip,
  port: v.port,
  mtlsCert: v.mtls_cert,
  apiVersion: v.supported_version ?? defaultVersion
})

/** A failed request → the machine's event (keylime-wire.md §2: 408, 5xx and no answer are retried). */
const requestEvent = (e: AgentRequestFailed, delivering: boolean): LoopEvent => {
  const retry = e.kind === "timeout" || e.kind === "connection" || e.kind === "tls" ||
    (e.kind === "http_status" && (e.status === 408 || (e.status ?? 0) >= 500))
  if (delivering) return retry ? { _tag: "VUnreachable", reason: e.message } : { _tag: "VRefused" }
  if (retry) return { _tag: "QuoteUnreachable", reason: e.message }
  if (e.kind === "http_status" && e.status === 400 && /API version not supported/i.test(e.reason)) {
    return { _tag: "QuoteRefused", reason: "version_not_supported" }
  }
  return { _tag: "QuoteRefused", reason: "no_quote" }
}

const verdictOf = (evaluation: Evaluation): Verdict => {
  const h = evaluation.severity.highest
  if (evaluation.failures.length === 0 || h === undefined) return { _tag: "Valid" }
  return { _tag: "Invalid", eventId: h.failure.type, severity: h.severity.level, recoverable: evaluation.severity.recoverable }
}

/** The agent rebooted (its list restarted): ask again at once, at most this many times per cycle. */
const MAX_RESTARTS = 2

export const runAgentLoop = (deps: LoopDeps, agentId: string) => {
  const { agents, client } = deps

  const load = agents.findView(agentId)

  /**
   * After a lost write: what the row says now (a deleted row ends the loop as TERMINATED would). A
   * newer owner epoch means another loop (here or in another process) polls the agent now: this
   * one ends without reading the row again, so two loops never both write.
   */
  const superseded = (ctx: Ctx) =>
    Effect.flatMap(agents.ownership(agentId), (row): Effect.Effect<LoopEvent | "finish"> => {
      if (Option.isNone(row)) return Effect.succeed({ _tag: "Superseded", storedState: 8 })
      if (row.value.ownerEpoch !== ctx.epoch) {
        return Effect.as(
          Effect.logWarning(`agent ${agentId}: a newer loop owns it (owner epoch ${row.value.ownerEpoch}, this loop's ${ctx.epoch}); this loop ends`).pipe(
            Effect.zipRight(client.release(agentId))
          ),
          "finish" as const
        )
      }
      return Effect.succeed({ _tag: "Superseded", storedState: row.value.operationalState })
    })
  const fenceOf = (ctx: Ctx) => ({ generation: ctx.generation, ownerEpoch: ctx.epoch })

  const fetchAndJudge = (ctx: Ctx, request: Extract<LoopEffect, { _tag: "RequestQuote" }>) =>
    Effect.gen(function*() {
      // no read before the quote: an admin change (generation) or a replaced policy (checksum)
      // makes the verdict's write lose, and the loop reads the row again (Superseded → Reload)
      if (ctx.compiled === undefined || ctx.compiled.key !== policyKey(ctx.view)) {
        const compiled = yield* Effect.either(compilePullAgent(ctx.view, deps.settings, deps))
        if (Either.isLeft(compiled)) return { _tag: "Crashed", message: compiled.left.message } as LoopEvent
        ctx.compiled = compiled.right
      }
      const target = targetOf(ctx.view, deps.defaultApiVersion)
      let partial = request.partial
      let imaEntry = request.imaEntry
      let prior = ctx.prior
      for (let attempt = 0;; attempt++) {
        const nonce = newNonce()
        const answer = yield* Effect.either(client.integrityQuote(target, { nonce, mask: ctx.compiled.mask, partial, imaEntry }))
        if (Either.isLeft(answer)) {
          yield* Effect.logInfo(`quote request failed: ${answer.left.message}`)
          return requestEvent(answer.left, false)
        }
        const receivedAt = yield* nowSeconds
        const evaluation = yield* judge(ctx.compiled, answer.right, nonce, prior)
        if (evaluation.restart && attempt < MAX_RESTARTS) {
          yield* Effect.logInfo(`agent rebooted: asking again for its measurement list from entry 0`)
          prior = evaluation.nextState
          partial = 0
          imaEntry = 0
          continue
        }
        ctx.judged = { evaluation, receivedAt, nonce }
        if (evaluation.nkChanged) ctx.state = { ...ctx.state, vDelivered: false }
        return {
          _tag: "QuoteReceived",
          verdict: verdictOf(evaluation),
          imaEntry: evaluation.nextState.ima.nextEntry,
          pubkeyKnown: evaluation.nextState.nk !== null
        } as LoopEvent
      }
    }).pipe(Effect.withSpan("verifier.cycle", { attributes: { agent_id: agentId, ima_ml_entry: request.imaEntry, partial: request.partial }, captureStackTrace: false }))

  const judge = (compiled: CompiledAgent, answer: IntegrityQuote, nonce: string, prior: EvaluationState) =>
    // the whole judgement (quote, PCRs, IMA, boot) is one pure call; its stages become histograms and child spans
    evaluateTimed((now) =>
      evaluateEvidence(
        { _tag: "tpm", nonce: new TextEncoder().encode(nonce), ...answer, ima_measurement_list_entry: answer.ima_measurement_list_entry ?? undefined },
        compiled.policy,
        prior,
        now
      ), stagesOf).pipe(Effect.withSpan("verifier.evaluate", { captureStackTrace: false }))

  const deliverV = (ctx: Ctx) =>
    Effect.gen(function*() {
      const v = ctx.view.v === null ? undefined : fromBase64(ctx.view.v)
      const nk = ctx.prior.nk
      if (v === undefined || nk === null) return { _tag: "Crashed", message: "V or the agent's NK is not known" } as LoopEvent
      const encrypted = encryptForAgent(nk, v)
      if (Either.isLeft(encrypted)) return { _tag: "Crashed", message: encrypted.left.message } as LoopEvent
      const sent = yield* Effect.either(client.deliverV(targetOf(ctx.view, deps.defaultApiVersion), Buffer.from(encrypted.right).toString("base64")))
      if (Either.isLeft(sent)) {
        yield* Effect.logInfo(`V delivery failed: ${sent.left.message}`)
        return requestEvent(sent.left, true)
      }
      yield* Effect.logInfo("V delivered to the agent")
      return { _tag: "VDelivered" } as LoopEvent
    }).pipe(Effect.withSpan("verifier.deliverV", { attributes: { agent_id: agentId } }))

  const at = (after: number | null | undefined) =>
    after === undefined ? Effect.succeed(undefined) : after === null ? Effect.succeed(null) : Effect.map(nowSeconds, (now) => now + after)

  /** The revocation message a `Notify` asks for, about the quote just judged (or the event alone). */
  const revocationOf = (ctx: Ctx, notify: NotifyEffect): RevocationRequest => {
    const h = ctx.judged?.evaluation.severity.highest
    const context = notify.kind === "revocation" && h !== undefined
      ? h.failure.context
      : { message: `agent ${agentId}: ${notify.event.eventId}` }
    return { agent: ctx.view, kind: notify.kind, event: notify.event, context }
  }

  /** A write, with the notice that follows it in the same transaction when there is one. */
  const withNotice = <E>(ctx: Ctx, notify: NotifyEffect | undefined, write: Effect.Effect<boolean, E>) =>
    notify === undefined ? write : deps.notifications.revocationWith(write, revocationOf(ctx, notify))

  /**
   * Performs one effect; returns the next event, "finish", or undefined to go on with the next
   * effect. `notify` is the `Notify` that follows a verdict or a failure: written with it.
   */
  const perform = (ctx: Ctx, effect: LoopEffect, notify?: NotifyEffect): Effect.Effect<LoopEvent | "finish" | undefined, unknown> => {
    const won = (ok: boolean, state: OperationalState) =>
      ok ? Effect.as(setAgentState(agentId, state), undefined) : superseded(ctx)
    switch (effect._tag) {
      case "RequestQuote":
        return fetchAndJudge(ctx, effect)
      case "DeliverV":
        return deliverV(ctx)
      case "PersistVerdict":
        return Effect.gen(function*() {
          const judged = ctx.judged
          if (judged === undefined) return { _tag: "Crashed", message: "a verdict to persist without a judged quote" } as LoopEvent
          const next = judged.evaluation.nextState
          const ok = yield* withNotice(ctx, notify, agents.recordVerdict(agentId, fenceOf(ctx), {
            operationalState: effect.operationalState,
            valid: effect.valid,
            receivedAt: judged.receivedAt,
            event: effect.event === undefined ? undefined : { ...effect.event, message: judged.evaluation.severity.highest?.failure.context.message },
            evaluationState: encodeEvaluationState(next),
            algorithms: next.alg.hash === "" ? undefined : { hashAlg: next.alg.hash, encAlg: next.alg.enc, signAlg: next.alg.sign },
            vDelivered: ctx.state.vDelivered,
            nextPollAt: effect.nextPollAfter === null ? null : (yield* nowSeconds) + effect.nextPollAfter,
            policyChecksums: { runtime: ctx.view.runtime_policy_checksum, mb: ctx.view.mb_policy_checksum },
            // what its EAR is signed from when a relying party asks (src/verifier/pull/pullEar.ts)
            lastVerdict: verdictFactsJson(judged.evaluation, judged.nonce, judged.receivedAt)
          }))
          if (!ok) return yield* superseded(ctx)
          if (!effect.valid) yield* crashPoint("after-invalid-verdict")
          ctx.prior = next
          yield* recordAttestation("pull", effect.valid, judged.evaluation.failures.map((f) => f.type))
          if (effect.valid) yield* observeFreshness(agentId, judged.receivedAt)
          else {
            const h = judged.evaluation.severity.highest
            yield* Effect.logWarning(`attestation failed: ${h?.failure.type ?? "?"}: ${h?.failure.context.message ?? ""}`)
          }
          return yield* won(true, effect.operationalState)
        })
      case "PersistRetry":
        return Effect.gen(function*() {
          yield* Effect.logInfo(`agent not reachable; retry ${effect.retryCount}/${deps.machine.maxRetries} in ${effect.after} s`)
          const ok = yield* agents.recordRetry(agentId, fenceOf(ctx), {
            operationalState: effect.operationalState,
            retryCount: effect.retryCount,
            nextPollAt: (yield* nowSeconds) + effect.after
          })
          return yield* won(ok, effect.operationalState)
        })
      case "PersistFailed":
        return Effect.gen(function*() {
          yield* Effect.logWarning(`agent FAILED: ${effect.event.eventId}`)
          return yield* won(yield* withNotice(ctx, notify, agents.markFailed(agentId, fenceOf(ctx), { event: effect.event })), 7)
        })
      case "PersistState":
        return Effect.gen(function*() {
          const ok = yield* agents.setState(agentId, fenceOf(ctx), {
            operationalState: effect.operationalState,
            vDelivered: effect.vDelivered,
            retryCount: effect.retryCount,
            nextPollAt: yield* at(effect.nextPollAfter)
          })
          return yield* won(ok, effect.operationalState)
        })
      case "Notify":
        // a Notify on its own (the machine puts one after a verdict or a failure, written with it)
        return Effect.as(deps.notifications.revocation(revocationOf(ctx, effect)), undefined)
      case "ScheduleNext":
        return Effect.as(Effect.sleep(effect.after * 1000), { _tag: "Tick" } as LoopEvent)
      case "Reload":
        return Effect.gen(function*() {
          const view = yield* load
          if (Option.isNone(view)) return "finish" as const
          Object.assign(ctx, ctxOf(view.value, ctx.epoch))
          return { _tag: "Begin" } as LoopEvent
        })
      case "DeleteAgent":
        return Effect.gen(function*() {
          yield* deps.removeAgent(agentId)
          yield* client.release(agentId)
          yield* Effect.logInfo("agent deleted (it was TERMINATED)")
          return undefined
        })
      case "Finish":
        return Effect.gen(function*() {
          yield* Effect.logInfo(`polling ends (${effect.reason}); state ${stateName[ctx.state.operationalState]}`)
          if (effect.reason !== "deleted") yield* client.release(agentId)
          return "finish" as const
        })
    }
  }

  /** A failure of the database (or a defect): a StoreError is waited out, anything else is `Crashed`. */
  const guarded = (ctx: Ctx, effect: LoopEffect, notify: NotifyEffect | undefined) =>
    perform(ctx, effect, notify).pipe(
      Effect.catchAllCause((cause): Effect.Effect<LoopEvent | "finish" | undefined | "store"> => {
        if (Cause.isInterruptedOnly(cause)) return Effect.failCause(cause as Cause.Cause<never>)
        const failure = Cause.failureOption(cause)
        if (Option.isSome(failure) && (failure.value as { _tag?: string })?._tag === "VerifierStoreError") {
          return Effect.as(Effect.logWarning(`database: ${(failure.value as Error).message}; reading the agent again shortly`), "store" as const)
        }
        return Effect.as(Effect.logError("cycle crashed", cause), { _tag: "Crashed", message: Cause.pretty(cause).split("\n")[0] ?? "defect" } as LoopEvent)
      })
    )

  return Effect.gen(function*() {
    const first = yield* load
    if (Option.isNone(first) || first.value.verifier_id !== deps.verifierId) return
    // every start of a loop passes here (add, reactivate, a changed configuration, restart)
    if (yield* deps.isPushAgent(agentId)) {
      yield* Effect.logInfo("not polled: the agent is attested by push")
      return
    }
    // the fencing token: from here on a loop started later (any process) wins every write
    const epoch = yield* agents.takeOwnership(agentId, deps.verifierId)
    if (Option.isNone(epoch)) return
    const ctx = ctxOf(first.value, epoch.value)
    yield* setAgentState(agentId, ctx.state.operationalState)
    // resuming: an agent whose next poll is due later waits for it (no herd of quotes at start-up)
    const nextPollAt = first.value.next_poll_at
    if (nextPollAt !== null) {
      const wait = nextPollAt - Math.floor((yield* Clock.currentTimeMillis) / 1000)
      if (wait > 0) yield* Effect.sleep(Math.min(wait, 3600) * 1000)
    }
    let event: LoopEvent = { _tag: "Begin" }
    for (;;) {
      const { effects, state } = step(ctx.state, event, deps.machine)
      ctx.state = state
      let next: LoopEvent | "finish" | "store" | undefined
      for (let i = 0; i < effects.length; i++) {
        const effect = effects[i]!
        // a verdict or a failure and the notice it causes are one transaction
        const following = effects[i + 1]
        const notify = (effect._tag === "PersistVerdict" || effect._tag === "PersistFailed") && following?._tag === "Notify" ? following : undefined
        next = yield* guarded(ctx, effect, notify)
        if (next !== undefined) break
        if (notify !== undefined) i++
      }
      if (next === "finish" || next === undefined) return
      if (next === "store") {
        yield* Effect.sleep(deps.storeRetrySeconds * 1000)
        const view = yield* Effect.option(load)
        if (Option.isSome(view) && Option.isNone(view.value)) return
        if (Option.isSome(view) && Option.isSome(view.value)) Object.assign(ctx, ctxOf(view.value.value, ctx.epoch))
        event = { _tag: "Begin" }
        continue
      }
      event = next
    }
  }).pipe(Effect.annotateLogs("agent_id", agentId))
}
