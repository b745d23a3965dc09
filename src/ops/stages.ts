/**
 * The verification stages of one evaluation as operations see them: `evaluateEvidence` (pure,
 * synchronous) is given `performance.now` and reports when each stage ran (`Evaluation.stages`);
 * this module records each stage's duration in `attest_check_duration_seconds{check=<stage>}` and
 * exports it as a child span `verifier.check.<stage>` of the caller's span, with the measured start
 * and end (the Tracer's own clock, shifted by the stage's offset on the monotonic clock) when a
 * tracer exports them (src/ops/Tracing.ts; Effect's own tracer gets none). The pull
 * loop, push attestations and verify/evidence all go through `evaluateTimed`.
 */
import { Clock, Context, Effect, Exit, Option, Tracer } from "effect"
import type { StageClock, StageTiming } from "../attestation/evaluate/types.js"
import { Metrics } from "./metrics.js"

/** The evaluator's clock: milliseconds, monotonic, fractional. */
export const stageClock: StageClock = () => performance.now()

const NO_LINKS: ReadonlyArray<Tracer.SpanLink> = []
/**
 * Effect's own tracer (the default, in place when no `otlp_endpoint` exports spans): its spans go
 * nowhere, so stage spans are not made for it (no exporter, no cost; the histograms still count).
 */
const nativeTracer = Effect.runSync(Effect.tracer)
const EMPTY_CONTEXT = Context.empty()

/** Each stage's seconds into its histogram (benches, and callers without a span). */
export const unsafeObserveStages = (stages: ReadonlyArray<StageTiming> | undefined): void => {
  if (stages === undefined) return
  for (const s of stages) Metrics.checkDuration.series(s.stage).unsafeUpdate((s.end - s.start) / 1000, [])
}

/** The stages of an Evaluation (the common `stagesOf`). */
export const stagesOf = (e: { readonly stages?: ReadonlyArray<StageTiming> | undefined }): ReadonlyArray<StageTiming> | undefined => e.stages

/**
 * Records stages measured on `stageClock` (by this thread, or converted onto it: the stateless
 * workers' stages) as histograms and as child spans of the current span (none without one).
 */
export const recordStages = (stages: ReadonlyArray<StageTiming> | undefined): Effect.Effect<void> => {
  if (stages === undefined || stages.length === 0) return Effect.void
  unsafeObserveStages(stages)
  return Effect.withFiberRuntime<void>((fiber) => {
    const current = fiber.currentSpan
    const tracer = fiber.currentTracer
    if (current === undefined || current._tag !== "Span" || tracer === nativeTracer) return Effect.void
    // one reading of each clock maps the monotonic milliseconds onto the tracer's nanoseconds
    const nowMs = stageClock()
    const nowNs = Context.get(fiber.currentDefaultServices, Clock.Clock).unsafeCurrentTimeNanos()
    const at = (ms: number) => nowNs - BigInt(Math.round((nowMs - ms) * 1_000_000))
    const parent = Option.some(current)
    for (const s of stages) {
      const span = tracer.span(`verifier.check.${s.stage}`, parent, EMPTY_CONTEXT, NO_LINKS, at(s.start), "internal")
      span.end(at(s.end), Exit.void)
    }
    return Effect.void
  })
}

/**
 * Runs `evaluate` with the stage clock, then records the stages of what it returned (`stagesOf`)
 * with recordStages.
 */
export const evaluateTimed = <A>(
  evaluate: (now: StageClock) => A,
  stagesOf: (a: A) => ReadonlyArray<StageTiming> | undefined
): Effect.Effect<A> => Effect.flatMap(Effect.sync(() => evaluate(stageClock)), (a) => Effect.as(recordStages(stagesOf(a)), a))
