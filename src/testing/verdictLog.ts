/**
 * The fleet's verdict log: one line per verdict, in the order the verifier wrote them, each with
 * the simulated time since the fleet started, the agent, its model, the result and its facts:
 *
 *   00:07:00 agent-03 pull fail ima.file_hash_mismatch state=Invalid Quote
 *   00:12:20 agent-05 pull retry 1/3 state=Get Quote (retry)
 *   00:12:50 agent-05 pull failed internal.verifier.not_reachable state=Failed
 *   00:20:00 agent-41 push pass
 *
 * Lines are taken where the verifier's own code records the verdict: its repositories, decorated
 * in context (the pull loop's AgentRepo, the push protocol's PushRepo), after the write succeeded,
 * so a verdict the database refused is not in the log. Nothing random reaches a line: no nonce,
 * challenge, token or signature, only the simulated time and what the verdict said.
 */
import { Clock, Context, Effect, Either, Layer, Schema } from "effect"
import { readVerdictFacts } from "../ear/verdictFacts.js"
import { AgentRepo, type OperationalState, PushRepo, stateName } from "../verifier/index.js"

export type AgentModel = "pull" | "push"

/** One verdict as the log holds it. */
export interface VerdictLine {
  /** Milliseconds of simulated time since the fleet started. */
  readonly at: number
  readonly agentId: string
  readonly model: AgentModel
  /** pass / fail: a judged quote; retry: the agent did not answer; failed: polling ended (FAILED); timeout: a push deadline passed. */
  readonly result: "pass" | "fail" | "retry" | "failed" | "timeout"
  /** Failure types of a fail (first of each type, in the evaluator's order), or the event of a failed. */
  readonly failures: ReadonlyArray<string>
  /** The agent's operational state after the verdict (pull only). */
  readonly state?: string | undefined
  /** "<n>/<max>" of a retry. */
  readonly retry?: string | undefined
}

const pad = (n: number) => String(n).padStart(2, "0")

/** hh:mm:ss of a simulated duration (fractions of a second are kept as .mmm). */
export const clockText = (ms: number): string => {
  const s = Math.floor(ms / 1000)
  const rest = ms % 1000
  return `${pad(Math.floor(s / 3600))}:${pad(Math.floor(s / 60) % 60)}:${pad(s % 60)}${rest === 0 ? "" : `.${String(rest).padStart(3, "0")}`}`
}

export const lineText = (l: VerdictLine): string =>
  [
    clockText(l.at),
    l.agentId,
    l.model,
    l.result,
    ...(l.retry === undefined ? [] : [l.retry]),
    ...(l.failures.length === 0 ? [] : [l.failures.join(",")]),
    ...(l.state === undefined ? [] : [`state=${l.state}`])
  ].join(" ")

export interface VerdictLogShape {
  readonly lines: ReadonlyArray<VerdictLine>
  readonly append: (line: Omit<VerdictLine, "at">) => Effect.Effect<void>
}

export class VerdictLog extends Context.Tag("attest/testing/VerdictLog")<VerdictLog, VerdictLogShape>() {}

/** An empty log whose times count from `startedAt` (epoch ms of the simulated clock). */
export const makeVerdictLog = (startedAt: number): VerdictLogShape => {
  const lines: Array<VerdictLine> = []
  return {
    lines,
    append: (line) => Effect.map(Clock.currentTimeMillis, (now) => void lines.push({ ...line, at: now - startedAt }))
  }
}

const nameOf = (state: number | undefined) => state === undefined ? undefined : stateName[state as OperationalState] ?? String(state)

const FailureTypes = Schema.parseJson(Schema.Array(Schema.Struct({ type: Schema.String })))
const typesOf = (json: string): ReadonlyArray<string> => Either.match(Schema.decodeUnknownEither(FailureTypes)(json), { onLeft: () => ["(unreadable failures)"], onRight: (fs) => fs.map((f) => f.type) })

/** The pull loop's AgentRepo, logging each verdict, retry and FAILED it writes. */
export const loggingAgentRepo = (maxRetries: number): Layer.Layer<AgentRepo, never, AgentRepo | VerdictLog> =>
  Layer.effect(
    AgentRepo,
    Effect.gen(function*() {
      const inner = yield* AgentRepo
      const log = yield* VerdictLog
      const when = <E>(write: Effect.Effect<boolean, E>, line: () => Omit<VerdictLine, "at">) =>
        Effect.tap(write, (won) => won ? log.append(line()) : Effect.void)
      return AgentRepo.make({
        ...inner,
        recordVerdict: (agentId, fence, w) =>
          when(inner.recordVerdict(agentId, fence, w), () => {
            const facts = w.lastVerdict === undefined ? undefined : Either.getOrUndefined(readVerdictFacts(w.lastVerdict))
            return {
              agentId,
              model: "pull",
              result: w.valid ? "pass" : "fail",
              failures: w.valid ? [] : facts?.failures.map((f) => f.type) ?? (w.event === undefined ? [] : [w.event.eventId]),
              state: nameOf(w.operationalState)
            }
          }),
        recordRetry: (agentId, fence, w) =>
          when(inner.recordRetry(agentId, fence, w), () => ({
            agentId,
            model: "pull",
            result: "retry",
            retry: `${w.retryCount}/${maxRetries}`,
            failures: [],
            state: nameOf(w.operationalState)
          })),
        markFailed: (agentId, fence, w) =>
          when(inner.markFailed(agentId, fence, w), () => ({
            agentId,
            model: "pull",
            result: "failed",
            failures: [w.event.eventId],
            state: nameOf(w.operationalState ?? 7)
          }))
      })
    })
  )

/** The push protocol's PushRepo, logging each verdict it records and each deadline that passes. */
export const loggingPushRepo: Layer.Layer<PushRepo, never, PushRepo | VerdictLog> = Layer.effect(
  PushRepo,
  Effect.gen(function*() {
    const inner = yield* PushRepo
    const log = yield* VerdictLog
    return PushRepo.make({
      ...inner,
      recordVerdict: (agentId, idx, v) =>
        Effect.tap(inner.recordVerdict(agentId, idx, v), (won) =>
          won
            ? log.append({ agentId, model: "push", result: v.verdict.pass ? "pass" : "fail", failures: v.verdict.pass ? [] : typesOf(v.verdict.failures) })
            : Effect.void),
      expireDeadlines: (now) =>
        Effect.tap(inner.expireDeadlines(now), (ids) =>
          Effect.forEach([...ids].sort(), (agentId) => log.append({ agentId, model: "push", result: "timeout", failures: [] }), { discard: true }))
    })
  })
)
