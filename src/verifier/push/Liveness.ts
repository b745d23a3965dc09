/**
 * Push liveness (spec §3.3; push-model.md §2.2): every processed attestation stores a deadline of
 * `quote_interval * 5` in push_agents; one fiber sleeps (Clock) until the earliest deadline and
 * then ends acceptance of every agent whose deadline passed (status TIMEOUT, or FAIL after
 * failures). Deadlines are rows, so a restarted or killed verifier applies them when it starts
 * (Keylime keeps its timers in memory and loses them: keylime#1888). Agents that never attested
 * have no deadline. An attestation that passes, or an admin reactivation, restores acceptance.
 */
import { Clock, Duration, Effect, Option, Queue } from "effect"
import { PushRepo } from "./repo.js"

/** Longest sleep between checks, so a deadline written by another process is seen. */
const MAX_SLEEP_MS = 30_000

export class Liveness extends Effect.Service<Liveness>()("attest/verifier/push/Liveness", {
  scoped: Effect.gen(function*() {
    const repo = yield* PushRepo
    const wake = yield* Queue.sliding<void>(1)
    // when the sweeper looks next (epoch ms); -Infinity while it sweeps, so a deadline written
    // meanwhile wakes it again. A verdict's deadline (now + 5 intervals) is almost never earlier
    // than the one awaited: waking the sweeper for it would cost two statements per attestation.
    let wakeAt = Number.NEGATIVE_INFINITY

    const sweep = Effect.gen(function*() {
      wakeAt = Number.NEGATIVE_INFINITY
      const now = yield* Clock.currentTimeMillis
      const expired = yield* repo.expireDeadlines(now)
      for (const agentId of expired) {
        yield* Effect.logWarning(`Agent ${agentId} has timed out: no attestation within quote_interval * 5; attestations are no longer accepted until it attests again or is reactivated`).pipe(
          Effect.annotateLogs({ agent_id: agentId })
        )
      }
      const next = yield* repo.nextDeadline
      const wait = Option.match(next, { onNone: () => MAX_SLEEP_MS, onSome: (d) => Math.min(MAX_SLEEP_MS, Math.max(0, d - now)) })
      wakeAt = now + wait
      // woken early when a deadline is (re)scheduled: it may be the first one
      yield* Effect.raceFirst(Effect.sleep(Duration.millis(wait)), Queue.take(wake))
    }).pipe(
      Effect.catchAll((e) => Effect.zipRight(Effect.logError(`push deadline check failed: ${e.message}`), Effect.sleep(Duration.seconds(2))))
    )

    yield* Effect.forkScoped(Effect.forever(sweep))

    /** A deadline was written: look again if it falls before the sweeper's next look. */
    const rescheduled = (deadlineAt: number) => deadlineAt < wakeAt ? Queue.offer(wake, undefined).pipe(Effect.asVoid) : Effect.void
    return { rescheduled } as const
  })
}) {}
