/**
 * `attest_oldest_verified_quote_seconds` from the database (issue 24): every few seconds each
 * verifier process reads the oldest verified quote among active pull agents (FleetRepo), whichever
 * process or runner polls them, so an agent stranded by a cluster that believes it is polled still
 * shows; the metrics scrape turns it into an age (src/ops/metrics.ts). A read that fails keeps the
 * last value (the gauge grows, as it should when nothing is known to be fresh).
 */
import { Effect, Layer, Option, Schedule } from "effect"
import { setOldestVerifiedQuote } from "../../ops/metrics.js"
import { FleetRepo } from "./repo/FleetRepo.js"

/** Often enough for an alert on a few quote intervals; one indexed aggregate per read. */
const READ_EVERY = "5 seconds"

export const FreshnessGaugeLive = Layer.scopedDiscard(
  Effect.gen(function*() {
    const fleet = yield* FleetRepo
    const read = fleet.oldestVerifiedQuote().pipe(
      Effect.flatMap((oldest) => setOldestVerifiedQuote(Option.getOrUndefined(oldest))),
      Effect.catchAllCause((cause) => Effect.logDebug("oldest verified quote not read", cause))
    )
    // no spans: a gauge's read every few seconds is an idle verifier's most frequent work, and its
    // spans (the repository's, the statement's) cost more than the read itself
    yield* Effect.forkScoped(Effect.repeat(read, Schedule.spaced(READ_EVERY)).pipe(Effect.withTracerEnabled(false)))
  })
).pipe(Layer.provide(FleetRepo.Default))
