/**
 * `attest_oldest_verified_quote_seconds` from the database (issue 24): each verifier process reads
 * the oldest verified quote among active pull agents (FleetRepo), whichever process or runner polls
 * them, so an agent stranded by a cluster that believes it is polled still shows; the metrics
 * scrape turns it into an age (src/ops/metrics.ts). The read runs at each scrape (issue 25: it was
 * every 5 s, an idle verifier's most frequent wake-up, for a value nobody had asked for), so the
 * gauge is as fresh as the scrape. A read that fails or does not answer within READ_TIMEOUT keeps
 * the last value (the gauge grows, as it should when nothing is known to be fresh).
 */
import { Effect, Layer, Option } from "effect"
import { setOldestVerifiedQuote } from "../../ops/metrics.js"
import { onScrapeRead } from "../../ops/prometheus.js"
import { FleetRepo } from "./repo/FleetRepo.js"

/** A scrape waits this long at most for the read (one indexed aggregate) before answering with the last value. */
const READ_TIMEOUT = "2 seconds"

export const FreshnessGaugeLive = Layer.scopedDiscard(
  Effect.gen(function*() {
    const fleet = yield* FleetRepo
    const read = fleet.oldestVerifiedQuote().pipe(
      Effect.timeoutFail({ duration: READ_TIMEOUT, onTimeout: () => "no answer within " + READ_TIMEOUT }),
      Effect.flatMap((oldest) => setOldestVerifiedQuote(Option.getOrUndefined(oldest))),
      Effect.catchAllCause((cause) => Effect.logDebug("oldest verified quote not read", cause)),
      // scrapes are not traced (src/http/MetricsListener.ts), nor is what they read
      Effect.withTracerEnabled(false)
    )
    yield* Effect.acquireRelease(Effect.sync(() => onScrapeRead(read)), (remove) => Effect.sync(remove))
  })
).pipe(Layer.provide(FleetRepo.Default))
