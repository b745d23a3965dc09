/**
 * Push attestations (spec §4.5; push-model.md §1.3-1.5, §2.1): phase 1 creates attestation
 * <index> with the verifier's choice of evidence and a fresh challenge; phase 2 stores the
 * evidence (stage evaluating_evidence) and returns at once, while a background fiber judges it
 * with the one evaluator (`evaluateEvidence`) and records pass or fail with its reason, the
 * agent's push state and its next deadline. Push agents are gated by 503 verification_in_progress
 * and 429 premature_attestation only: a push agent whose acceptance ended may POST again to
 * recover (Keylime's 403 agent_attestations_disabled is for pull agents); one an administrator
 * stopped is refused. Both phases are bound to the session of the request's token: its row is read
 * with the context (phase 1, and phase 2 when it reads) and checked by the accept (phase 2), so a
 * session an administrator's change ended, in any process, creates and accepts nothing.
 */
import { Cause, Clock, Duration, Effect, Either, FiberSet, Option } from "effect"
import { type EvidenceCollected, type EvidenceRequested, type EvidenceSupported } from "../../../schemas/Push.js"
import { makeFailure } from "../../../schemas/Evidence.js"
import { AgentConfigUnusable } from "../../attestation/AgentConfigUnusable.js"
import { VerifierConfig } from "../../config/services.js"
import { recordAttestation } from "../../ops/metrics.js"
import { evaluateTimed, stagesOf } from "../../ops/stages.js"
import { evaluateEvidence } from "../../attestation/evaluate/evaluate.js"
import type { TpmEvidence } from "../../attestation/evaluate/types.js"
import { encodeEvaluationState, type EvaluationState, initialEvaluationState } from "../../attestation/evaluate/state.js"
import { crashBeforePushVerdict, holdPushVerdict } from "../domain/testHooks.js"
import { AgentRepo } from "../domain/repo/AgentRepo.js"
import { makeAgentPolicies, negotiationPolicyOf } from "./agentPolicy.js"
import { OperationalState } from "../../attestation/states.js"
import {
  AgentStopped,
  AttestationNotFound,
  ChallengesExpired,
  CreationConflict,
  EvidenceImmutable,
  OldAttestation,
  PrematureAttestation,
  PushAgentNotFound,
  TokenRefused,
  VerificationInProgress
} from "./errors.js"
import { randomBase64 } from "./challenges.js"
import { makePriorStates } from "./priorStates.js"
import { evidenceOf, failureReasonOf } from "./evidence.js"
import { type Handoff, makeHandoffs } from "./handoff.js"
import { Liveness } from "./Liveness.js"
import { negotiate } from "./negotiate.js"
import type { AttestationStatements } from "../domain/pushStore/attestationStatements.js"
import { PushRepo } from "../domain/pushStore/repo.js"
import type { AttestationContext, AttestationRow, LatestAttestation, PushAgentFacts } from "../domain/pushStore/rows.js"
import { sessionRefusal, Sessions } from "./Sessions.js"

/** `system_info.boot_time` as epoch seconds (the evaluator's boottime), when it parses. */
const bootSeconds = (text: string): number | undefined => {
  const ms = Date.parse(text)
  return Number.isNaN(ms) ? undefined : Math.floor(ms / 1000)
}

/** How often attestations left in evaluating_evidence past verification_timeout are looked for. */
const RERUN_EVERY_SECONDS = 15
/** The history sweep (bounded history): first a minute after start, then every 10 minutes, 500 rows a statement, 50 ms between. */
const PRUNE_FIRST = Duration.minutes(1)
const PRUNE_SWEEP = Duration.minutes(10)
const PRUNE_CHUNK = 500
const PRUNE_PAUSE = Duration.millis(50)

/** The request phase 1 stored (its own JSON, read up to three times per attestation: a plain parse). */
export const requestedOf = (row: AttestationRow): ReadonlyArray<EvidenceRequested> => {
  const parsed: unknown = JSON.parse(row.evidence_requested)
  if (!Array.isArray(parsed)) throw new Error(`attestation ${row.idx} of agent ${row.agent_id}: evidence_requested is not an array`)
  return parsed as ReadonlyArray<EvidenceRequested>
}

export class Attestations extends Effect.Service<Attestations>()("attest/verifier/push/Attestations", {
  scoped: Effect.gen(function*() {
    const repo = yield* PushRepo
    const agents = yield* AgentRepo
    const sessions = yield* Sessions
    const liveness = yield* Liveness
    const config = yield* VerifierConfig
    const clock = yield* Effect.clock
    const policies = yield* makeAgentPolicies
    const background = yield* FiberSet.make()
    const handoffs = makeHandoffs()
    /** "<agent>/<idx>" of the verdicts this process is judging now (the periodic re-run leaves them alone). */
    const inFlight = new Set<string>()
    const quoteMs = config.quote_interval * 1000
    /** Who judges the evidence this process accepts: in cluster mode this runner's address (the cluster's runner registry names it so). */
    const judge = config.cluster ? `${config.cluster_runner_host}:${config.cluster_runner_port}` : undefined
    // as the pull loop: without an OTLP exporter nobody reads these spans (nor those of the
    // statements and repositories below them), and making them is a large share of an attestation's CPU
    const traced = config.otlp_endpoint.trim() !== ""
    /** A span (and the tracer on) only with an exporter: Effect.fn's spans capture a stack trace per call. */
    const spanned = (name: string) => <A, E, R>(e: Effect.Effect<A, E, R>) => traced ? Effect.withSpan(e, name) : Effect.withTracerEnabled(e, false)

    const findAgent = (agentId: string) =>
      Effect.flatMap(agents.findView(agentId), Option.match({ onNone: () => Effect.fail(new PushAgentNotFound({ agentId })), onSome: Effect.succeed }))
    /**
     * The agent's facts, push row, latest attestation and (with `sessionId`) the state of the
     * request's session: what both phases read, in one statement (from the repo, or a group's
     * statements). The session must still authenticate the agent at `now`.
     */
    const contextOf = (agentId: string, from: Pick<AttestationStatements, "attestationContext"> = repo, sessionId?: string) =>
      Effect.flatMap(from.attestationContext(agentId, sessionId), (found): Effect.Effect<AttestationContext, PushAgentNotFound | TokenRefused> => {
        if (Option.isNone(found)) return Effect.fail(new PushAgentNotFound({ agentId }))
        const refusal = sessionId === undefined ? undefined : refusalOf(agentId, found.value, clock.unsafeCurrentTimeMillis())
        return refusal === undefined ? Effect.succeed(found.value) : Effect.fail(refusal)
      })
    /** Why the request's session, as the context read it, no longer authenticates the agent at `now`. */
    const refusalOf = (agentId: string, context: AttestationContext, now: number) =>
      Option.isNone(context.session) ? new TokenRefused({ reason: "unknown" }) : sessionRefusal(context.session.value, agentId, now)
    /** An agent that is gone: when the request's session ended with it, the token's refusal says so. */
    const whyMissing = (sessionId: string | undefined) => (e: PushAgentNotFound) =>
      sessionId === undefined
        ? Effect.fail(e)
        : Effect.flatMap(Effect.zip(repo.findSession(sessionId), Clock.currentTimeMillis), ([session, now]) => {
          const refusal = Option.isSome(session) ? sessionRefusal(session.value, e.agentId, now) : new TokenRefused({ reason: "unknown" })
          return Effect.fail(refusal ?? e)
        })
    /** The stored evaluation state as written (the verdict keeps it when it judges nothing). */
    const priorEncodedOf = (push: Option.Option<{ readonly evaluation_state: string | null }>) => Option.isSome(push) ? push.value.evaluation_state : null
    const priorStates = makePriorStates()
    const priorStateOf = (agentId: string, push: Option.Option<{ readonly evaluation_state: string | null }>) =>
      Option.isNone(push) ? initialEvaluationState : priorStates.stateOf(agentId, push.value.evaluation_state)

    /** Phase 1: its read and its insert on one reserved connection (nothing else in it touches the database). */
    const createUntraced = (agentId: string, input: { readonly evidenceSupported: ReadonlyArray<EvidenceSupported>; readonly bootTime: string }, sessionId?: string) =>
      repo.grouped((db) => Effect.gen(function*() {
        const context = yield* contextOf(agentId, db, sessionId)
        const now = yield* Clock.currentTimeMillis
        if (context.agent.operational_state === OperationalState.TENANT_FAILED) return yield* new AgentStopped({ agentId })
        // the push row is written at enrolment; an agent enrolled before it existed gets it now
        if (Option.isNone(context.push)) yield* db.ensurePushAgent(agentId, now)
        const latest = context.latest
        if (Option.isSome(latest)) {
          const l = latest.value
          if (l.stage === "evaluating_evidence" && l.evidence_received_at !== null) {
            const left = l.evidence_received_at + config.verification_timeout * 1000 - now
            if (left > 0) return yield* new VerificationInProgress({ agentId, waitSeconds: Math.ceil(left / 1000) })
          }
          if (l.evidence_received_at !== null && now < l.evidence_received_at + quoteMs) {
            return yield* new PrematureAttestation({ agentId, waitSeconds: Math.ceil((l.evidence_received_at + quoteMs - now) / 1000) })
          }
        }
        // the IMA log continues where the last passed attestation of this boot left it; one left
        // awaiting evidence (its agent died between its two requests) judged nothing: the one before counts
        const prior = priorStateOf(agentId, context.push)
        const judged = Option.isSome(latest) && latest.value.stage === "awaiting_evidence" ? yield* db.latestWithEvidence(agentId) : latest
        const sameBoot = Option.isSome(judged) && judged.value.evaluation === "pass" && judged.value.boot_time === input.bootTime
        const requested = yield* negotiate(
          { evidenceSupported: input.evidenceSupported, challenge: randomBase64(16), imaOffset: sameBoot ? prior.ima.nextEntry : 0 },
          negotiationPolicyOf(context.agent)
        )
        // the next index after the latest; the insert's key (agent, index) refuses a concurrent creation of the same one
        const row = {
          agent_id: agentId,
          idx: Option.isSome(latest) ? latest.value.idx + 1 : 0,
          capabilities: JSON.stringify(input.evidenceSupported),
          evidence_requested: JSON.stringify(requested),
          boot_time: input.bootTime,
          capabilities_received_at: now,
          challenges_expire_at: now + config.challenge_lifetime * 1000
        }
        if (!(yield* db.insertAttestation(row))) return yield* new CreationConflict({ agentId })
        // the agent's history stays at push_attestations_kept as it grows: a row or two by key here
        if (config.push_attestations_kept > 0 && row.idx >= config.push_attestations_kept) {
          yield* db.pruneAgentAttestations(agentId, row.idx - config.push_attestations_kept)
        }
        const created = {
          ...row,
          stage: "awaiting_evidence",
          evaluation: "pending",
          failure_reason: null,
          evidence_received_at: null,
          verification_completed_at: null
        } satisfies LatestAttestation
        handoffs.put(agentId, { latest: created, agent: context.agent, prior, priorEncoded: priorEncodedOf(context.push) })
        return { ...created, evidence: null, failures: null } satisfies AttestationRow
      })).pipe(Effect.catchTag("PushAgentNotFound", whyMissing(sessionId)))

    /** What phase 2 read and decoded, handed to the background verdict so it reads nothing again. */
    interface Accepted {
      readonly evidence: Either.Either<TpmEvidence, unknown>
      readonly agent: PushAgentFacts
      readonly prior: EvaluationState
      readonly priorEncoded: string | null
    }

    /**
     * The background judgement of attestation `idx`: phase 2 hands over what it just read and
     * stored; run again at start, it reads them.
     */
    const verify = (agentId: string, idx: number, accepted?: Accepted) =>
      Effect.suspend(() => {
        const key = `${agentId}/${idx}`
        inFlight.add(key)
        return Effect.ensuring(verifyOnce(agentId, idx, accepted), Effect.sync(() => inFlight.delete(key)))
      })
    const verifyOnce = (agentId: string, idx: number, accepted?: Accepted) =>
      Effect.gen(function*() {
        let given: Accepted
        if (accepted !== undefined) {
          yield* crashBeforePushVerdict(agentId)
          given = accepted
        } else {
          const row = yield* repo.findAttestation(agentId, idx)
          if (Option.isNone(row) || row.value.stage !== "evaluating_evidence" || row.value.evidence === null) return
          const collected = JSON.parse(row.value.evidence) as ReadonlyArray<EvidenceCollected>
          const context = yield* contextOf(agentId)
          given = {
            evidence: evidenceOf(requestedOf(row.value), collected, { bootTime: bootSeconds(row.value.boot_time) }),
            agent: context.agent,
            prior: priorStateOf(agentId, context.push),
            priorEncoded: priorEncodedOf(context.push)
          }
        }
        const { evidence, prior } = given
        const policy = yield* policies.policyOf(given.agent)
        const evaluation = Either.isLeft(evidence) ? undefined : yield* evaluateTimed((now) => evaluateEvidence(evidence.right, policy, prior, now), stagesOf)
        const failures = evaluation?.failures ?? [makeFailure("qoute_validation.invalid_quote", "the evidence does not answer the request")]
        const pass = failures.length === 0
        const now = yield* Clock.currentTimeMillis
        const deadlineAt = now + quoteMs * 5
        const tokenExpiresAt = pass ? sessions.extendedTokenExpiry(agentId, now) : undefined
        const nextEncoded = evaluation === undefined ? given.priorEncoded : encodeEvaluationState(evaluation.nextState)
        yield* holdPushVerdict
        const won = yield* repo.recordVerdict(agentId, idx, {
          verdict: { pass, reason: pass ? null : failureReasonOf(failures), failures: JSON.stringify(failures), at: now },
          outcome: {
            pass,
            at: now,
            deadlineAt,
            evaluationState: nextEncoded,
            clearFailures: config.auto_recover_attestation_failures
          },
          tokenExpiresAt
        })
        // judged already (another process ran the same verdict, or this one ran it twice): counted there
        if (!won) {
          return yield* Effect.logInfo(`push attestation ${idx} of agent ${agentId}: judged already; this verdict is not recorded`).pipe(
            Effect.annotateLogs({ agent_id: agentId })
          )
        }
        if (tokenExpiresAt !== undefined) sessions.tokenExtended(agentId, tokenExpiresAt)
        if (evaluation !== undefined && nextEncoded !== null) priorStates.wrote(agentId, nextEncoded, evaluation.nextState)
        yield* liveness.rescheduled(deadlineAt)
        yield* recordAttestation("push", pass, failures.map((f) => f.type))
        yield* Effect.logInfo(`push attestation ${idx} of agent ${agentId}: ${pass ? "pass" : `fail (${failureReasonOf(failures)}: ${failures.map((f) => f.type).join(", ")})`}`).pipe(
          Effect.annotateLogs({ agent_id: agentId })
        )
      }).pipe(
        Effect.catchAllCause((cause) =>
          Effect.gen(function*() {
            yield* Effect.logError(`push verification of agent ${agentId} attestation ${idx} failed`, cause)
            const now = yield* Clock.currentTimeMillis
            // a configuration the verifier cannot honour is named (field and reason), as the pull loop logs it
            const unusable = Option.filter(Cause.failureOption(cause), (e) => e instanceof AgentConfigUnusable)
            const f = Option.isSome(unusable)
              ? makeFailure("push.verification_error", unusable.value.message, { field: unusable.value.field })
              : makeFailure("push.verification_error", "the verifier could not judge the evidence")
            yield* repo.completeAttestation(agentId, idx, { pass: false, reason: "policy_violation", failures: JSON.stringify([f]), at: now })
          }).pipe(Effect.ignore)
        ),
        spanned("Attestations.verify")
      )

    /** Phase 2's evidence accepted (in session `sessionId` when given) and its verdict started, from what was read before. */
    const accept = (agentId: string, given: Handoff, collected: ReadonlyArray<EvidenceCollected>, now: number, sessionId: string | undefined) =>
      Effect.gen(function*() {
        const { latest } = given
        const row: AttestationRow = { ...latest, evidence: null, failures: null }
        const requested = requestedOf(row)
        const evidence = yield* evidenceOf(requested, collected, { bootTime: bootSeconds(latest.boot_time) })
        const stored = JSON.stringify(collected)
        if (!(yield* repo.acceptEvidence(agentId, latest.idx, stored, now, sessionId, judge))) return undefined
        yield* FiberSet.run(background, verify(agentId, latest.idx, { evidence: Either.right(evidence), agent: given.agent, prior: given.prior, priorEncoded: given.priorEncoded }))
        return {
          row: { ...row, stage: "evaluating_evidence", evidence: stored, evidence_received_at: now } satisfies AttestationRow,
          requested,
          collected,
          secondsToNext: Math.max(0, Math.round(quoteMs / 1000))
        }
      })

    /**
     * Phase 2: the evidence stored, the verdict left to a background fiber. On what phase 1 handed
     * over when it is here; otherwise, or when that way does not accept (evidence that does not
     * answer, an attestation no longer awaiting or no longer the latest, a session that ended), the
     * store is read and decides, with its exact refusal.
     */
    const submitUntraced = (agentId: string, index: number | "latest", collected: ReadonlyArray<EvidenceCollected>, sessionId?: string) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const handed = handoffs.take(agentId, index, now)
        if (handed !== undefined) {
          const done = yield* Effect.orElseSucceed(accept(agentId, handed, collected, now, sessionId), () => undefined)
          if (done !== undefined) return done
        }
        return yield* submitRead(agentId, index, collected, sessionId).pipe(Effect.catchTag("PushAgentNotFound", whyMissing(sessionId)))
      })

    const submitRead = (agentId: string, index: number | "latest", collected: ReadonlyArray<EvidenceCollected>, sessionId: string | undefined) =>
      Effect.gen(function*() {
        const context = yield* contextOf(agentId, repo, sessionId)
        if (Option.isNone(context.latest)) return yield* new AttestationNotFound({ agentId })
        const latest = context.latest.value
        if (index !== "latest" && index !== latest.idx) {
          // an older attestation (403) or none with that index (404)
          if (index < latest.idx && Option.isSome(yield* repo.findAttestation(agentId, index))) return yield* new OldAttestation({ agentId, index })
          return yield* new AttestationNotFound({ agentId, index })
        }
        if (latest.stage !== "awaiting_evidence") return yield* new EvidenceImmutable({ agentId, index: latest.idx })
        const now = yield* Clock.currentTimeMillis
        if (now >= latest.challenges_expire_at) return yield* new ChallengesExpired({ agentId, index: latest.idx, expiredAt: latest.challenges_expire_at })
        const done = yield* accept(agentId, { latest, agent: context.agent, prior: priorStateOf(agentId, context.push), priorEncoded: priorEncodedOf(context.push) }, collected, now, sessionId)
        if (done === undefined) return yield* new EvidenceImmutable({ agentId, index: latest.idx })
        return done
      })

    const list = Effect.fn("Attestations.list")(function*(agentId: string) {
      yield* findAgent(agentId)
      return yield* repo.listAttestations(agentId)
    })

    const show = Effect.fn("Attestations.show")(function*(agentId: string, index: number | "latest") {
      yield* findAgent(agentId)
      const row = index === "latest" ? yield* repo.latestAttestation(agentId) : yield* repo.findAttestation(agentId, index)
      if (Option.isNone(row)) return yield* new AttestationNotFound(index === "latest" ? { agentId } : { agentId, index })
      return row.value
    })

    // bounded history: each new attestation trims its agent's (above); this sweep, shortly after
    // start and then every PRUNE_SWEEP, removes what that left, PRUNE_CHUNK rows at a time with the
    // loop free between chunks (0 keeps all)
    if (config.push_attestations_kept > 0) {
      const sweep: Effect.Effect<void> = Effect.gen(function*() {
        for (;;) {
          const deleted = yield* repo.pruneAttestations(config.push_attestations_kept, PRUNE_CHUNK)
          if (deleted < PRUNE_CHUNK) return
          yield* Effect.sleep(PRUNE_PAUSE)
        }
      }).pipe(Effect.catchAll((e) => Effect.logWarning(`pruning push attestations failed: ${e.message}`)))
      yield* Effect.forkScoped(Effect.zipRight(Effect.sleep(PRUNE_FIRST), Effect.forever(Effect.zipRight(sweep, Effect.sleep(PRUNE_SWEEP)))))
    }

    // verifications a stopped process left half-done are judged again from their stored evidence:
    // at start every one (a restart), then periodically those whose verification_timeout passed
    // and that no verdict of this process is judging (their process died). A verdict that runs
    // twice counts once (the push state follows only the completion it made: attestationStatements.ts).
    // In cluster mode a runner starts with those its former self accepted, and the cluster's push
    // duties (one Singleton) re-run what dead runners left through `rejudgeOrphans`
    /** The verdicts of `pending` started again (those this process judges now are left alone); how many. */
    const rerun = (pending: ReadonlyArray<{ readonly agentId: string; readonly idx: number }>) =>
      Effect.suspend(() => {
        const due = pending.filter((p) => !inFlight.has(`${p.agentId}/${p.idx}`))
        return Effect.as(Effect.forEach(due, (p) => FiberSet.run(background, verify(p.agentId, p.idx)), { discard: true }), due.length)
      })
    yield* rerun(yield* Effect.orElseSucceed(judge === undefined ? repo.evaluating : repo.evaluatingJudgedBy(judge), () => []))
    if (judge === undefined) {
      yield* Effect.forkScoped(Effect.forever(Effect.zipRight(
        Effect.sleep(Duration.seconds(RERUN_EVERY_SECONDS)),
        Effect.flatMap(Clock.currentTimeMillis, (now) => repo.evaluatingBefore(now - config.verification_timeout * 1000)).pipe(
          Effect.flatMap(rerun),
          Effect.catchAll((e) => Effect.logWarning(`re-running stale push verifications failed: ${e.message}`))
        )
      )))
    }
    /**
     * Cluster mode: the verdicts runners not in `liveJudges` accepted, and any whose
     * verification_timeout passed, judged again here (but those this process judges now); how many
     * were started. The completion decides which run counts.
     */
    const rejudgeOrphans = (liveJudges: ReadonlyArray<string>) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => repo.orphanedVerdicts(liveJudges, now - config.verification_timeout * 1000)).pipe(Effect.flatMap(rerun))

    /** Waits until no verification runs (tests, benchmarks). */
    const idle = FiberSet.awaitEmpty(background)

    /** Phase 1; with `sessionId` (the request's token's session), only while that session authenticates the agent. */
    const create = (agentId: string, input: { readonly evidenceSupported: ReadonlyArray<EvidenceSupported>; readonly bootTime: string }, sessionId?: string) =>
      spanned("Attestations.create")(createUntraced(agentId, input, sessionId))
    /** Phase 2; with `sessionId`, only while that session authenticates the agent. */
    const submit = (agentId: string, index: number | "latest", collected: ReadonlyArray<EvidenceCollected>, sessionId?: string) =>
      spanned("Attestations.submit")(submitUntraced(agentId, index, collected, sessionId))

    return { create, submit, list, show, idle, rejudgeOrphans } as const
  })
}) {}
