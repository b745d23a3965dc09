/**
 * The pull loop's exchanges with its agent: ask for a quote and judge it with `evaluateEvidence`
 * (the policy compiled once per change of the row's policy facts), deliver V encrypted to the
 * agent's NK. A failed request is classified into the machine's event (keylime-wire.md §2: 408,
 * 5xx and no answer are retried); a policy that cannot be compiled or read fails typed
 * (LoopStepError), for the loop to decide.
 */
import { Effect, Either } from "effect"
import { VerifierConfig } from "../../config/services.js"
import type { IntegrityQuote } from "../../../schemas/Agent.js"
import { nowSeconds } from "../../db/dialect.js"
import { encryptForAgent } from "../../keys/nk.js"
import { evaluateTimed, stagesOf } from "../../ops/stages.js"
import { fromBase64 } from "../../tpm/bytes.js"
import { AgentClient, type AgentRequestFailed, newNonce } from "./AgentClient.js"
import { evaluateEvidence } from "../../attestation/evaluate/evaluate.js"
import type { EvaluationState } from "../../attestation/evaluate/state.js"
import type { Evaluation } from "../../attestation/evaluate/types.js"
import { type CompiledAgent, compilePullAgent, policyKey } from "./agentPolicy.js"
import type { LoopEffect, LoopEvent, Verdict } from "./machine.js"
import { PolicyCache } from "../domain/policy/PolicyCache.js"
import { MbPolicyRepo, RuntimePolicyRepo } from "../domain/repo/PolicyRepo.js"
import type { LoopStepError } from "./loopErrors.js"
import { type LoopMemory, targetOf } from "./loopMemory.js"
import type { LoopSettings } from "./loopSettings.js"

const identity = <A, E, R>(e: Effect.Effect<A, E, R>) => e

type RequestQuote = Extract<LoopEffect, { readonly _tag: "RequestQuote" }>

/** A failed request → the machine's event: retried when the agent may answer later, else refused. */
export const requestEvent = (e: AgentRequestFailed, delivering: boolean): LoopEvent => {
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

const crashed = (message: string): LoopEvent => ({ _tag: "Crashed", message })

/** The agent rebooted (its list restarted): ask again at once, at most this many times per cycle. */
const MAX_RESTARTS = 2

export interface QuoteRound {
  /** Asks for a quote (again at once after a reboot) and judges it; the judged quote goes to `memory.judged`. */
  readonly fetchAndJudge: (memory: LoopMemory, request: RequestQuote) => Effect.Effect<LoopEvent, LoopStepError>
  /** Sends V encrypted to the agent's NK. */
  readonly deliverV: (memory: LoopMemory) => Effect.Effect<LoopEvent>
}

export const makeQuoteRound = (settings: LoopSettings) =>
  Effect.gen(function*() {
    const client = yield* AgentClient
    const sources = { cache: yield* PolicyCache, runtimePolicies: yield* RuntimePolicyRepo, mbPolicies: yield* MbPolicyRepo }
    // without an exporter the cycle's spans go nowhere: not made (each is a context and fiber-ref update per cycle)
    const traced = (yield* VerifierConfig).otlp_endpoint.trim() !== ""
    const nonceBytes = new TextEncoder()

    const judge = (compiled: CompiledAgent, answer: IntegrityQuote, nonce: string, prior: EvaluationState) =>
      // the whole judgement (quote, PCRs, IMA, boot) is one pure call; its stages become histograms and child spans
      evaluateTimed((now) =>
        evaluateEvidence(
          { _tag: "tpm", nonce: nonceBytes.encode(nonce), ...answer, ima_measurement_list_entry: answer.ima_measurement_list_entry ?? undefined },
          compiled.policy,
          prior,
          now
        ), stagesOf).pipe(traced ? Effect.withSpan("verifier.evaluate", { captureStackTrace: false }) : identity)

    const fetchAndJudge = (m: LoopMemory, request: RequestQuote) =>
      Effect.gen(function*() {
        // no read before the quote: an admin change (generation) or a replaced policy (checksum)
        // makes the verdict's write lose, and the loop reads the row again (Superseded → Reload)
        if (m.compiled === undefined || m.compiled.key !== policyKey(m.view)) {
          m.compiled = yield* compilePullAgent(m.view, settings.compile, sources)
        }
        const compiled = m.compiled
        const target = targetOf(m.view, settings.defaultApiVersion)
        let partial = request.partial
        let imaEntry = request.imaEntry
        let prior = m.prior
        for (let attempt = 0;; attempt++) {
          const nonce = newNonce()
          const answer = yield* Effect.either(client.integrityQuote(target, { nonce, mask: compiled.mask, partial, imaEntry }))
          if (Either.isLeft(answer)) {
            yield* Effect.logInfo(`quote request failed: ${answer.left.message}`)
            return requestEvent(answer.left, false)
          }
          const receivedAt = yield* nowSeconds
          const evaluation = yield* judge(compiled, answer.right, nonce, prior)
          if (evaluation.restart && attempt < MAX_RESTARTS) {
            yield* Effect.logInfo(`agent rebooted: asking again for its measurement list from entry 0`)
            prior = evaluation.nextState
            partial = 0
            imaEntry = 0
            continue
          }
          m.judged = { evaluation, receivedAt, nonce }
          if (evaluation.nkChanged) m.state = { ...m.state, vDelivered: false }
          const received: LoopEvent = {
            _tag: "QuoteReceived",
            verdict: verdictOf(evaluation),
            imaEntry: evaluation.nextState.ima.nextEntry,
            pubkeyKnown: evaluation.nextState.nk !== null
          }
          return received
        }
      }).pipe(traced
        ? Effect.withSpan("verifier.cycle", {
          attributes: { agent_id: m.agentId, ima_ml_entry: request.imaEntry, partial: request.partial },
          captureStackTrace: false
        })
        : identity)

    const deliverV = (m: LoopMemory) =>
      Effect.gen(function*() {
        const v = m.view.v === null ? undefined : fromBase64(m.view.v)
        const nk = m.prior.nk
        if (v === undefined || nk === null) return crashed("V or the agent's NK is not known")
        const encrypted = encryptForAgent(nk, v)
        if (Either.isLeft(encrypted)) return crashed(encrypted.left.message)
        const sent = yield* Effect.either(client.deliverV(targetOf(m.view, settings.defaultApiVersion), Buffer.from(encrypted.right).toString("base64")))
        if (Either.isLeft(sent)) {
          yield* Effect.logInfo(`V delivery failed: ${sent.left.message}`)
          return requestEvent(sent.left, true)
        }
        yield* Effect.logInfo("V delivered to the agent")
        const delivered: LoopEvent = { _tag: "VDelivered" }
        return delivered
      }).pipe(Effect.withSpan("verifier.deliverV", { attributes: { agent_id: m.agentId } }))

    return { fetchAndJudge, deliverV } satisfies QuoteRound
  })
