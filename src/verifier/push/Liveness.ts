/**
 * Push liveness (spec §3.3; push-model.md §2.2): every processed attestation stores a deadline of
 * `quote_interval * 5` in push_agents; one fiber sleeps (Clock) until the earliest deadline and
 * then ends acceptance of every agent whose deadline passed (status TIMEOUT, or FAIL after
 * failures). Deadlines are rows, so a restarted or killed verifier keeps them (Keylime keeps its
 * timers in memory and loses them: keylime#1888). A restart is not a failure of the agents: no
 * deadline ends acceptance before one full deadline (`quote_interval * 5`) has passed since this
 * verifier started listening (`listening`; until it is called, since the service started), so an
 * agent whose deadline passed while the verifier was down has that long to attest again. Agents
 * that never attested have no deadline. Nor is the database's absence: while it is away no agent
 * can attest, so once it answers again every agent gets one full deadline from then, as after a
 * restart. A clock that went back does not stretch a deadline: none lies more than one full
 * deadline ahead. A clock that jumped forward (the wall clock ran ahead of the monotonic one
 * between two looks) is treated like a restart too: deadlines are wall-clock times, so the jump
 * would otherwise pass them all at once; every agent gets one full deadline from the jump.
 * Evidence received before its deadline meets it even while it waits for its verdict (a runner
 * that died judging it leaves it to another; repo `expireDeadlines`).
 * An attestation that passes, or an admin reactivation, restores acceptance.
 */
import { Clock, Duration, Effect, Option, Queue } from "effect"
import { VerifierConfig } from "../../config/services.js"
import { PushRepo } from "../domain/pushStore/repo.js"

/** Longest sleep between checks, so a deadline written by another process is seen. */
const MAX_SLEEP_MS = 30_000
/**
 * How far the wall clock may run ahead of the monotonic clock between two looks before it counts
 * as a jump (NTP slews far less than this; a late wake-up moves both clocks alike).
 */
const JUMP_TOLERANCE_MS = 5_000

export class Liveness extends Effect.Service<Liveness>()("attest/verifier/push/Liveness", {
  scoped: Effect.gen(function*() {
    const repo = yield* PushRepo
    const config = yield* VerifierConfig
    const wake = yield* Queue.sliding<void>(1)
    const graceMs = config.quote_interval * 5 * 1000
    // no deadline ends acceptance before this (epoch ms): one full deadline after the start
    let graceEndsAt = (yield* Clock.currentTimeMillis) + graceMs
    // when the sweeper looks next (epoch ms); -Infinity while it sweeps, so a deadline written
    // meanwhile wakes it again. A verdict's deadline (now + 5 intervals) is almost never earlier
    // than the one awaited: waking the sweeper for it would cost two statements per attestation.
    let wakeAt = Number.NEGATIVE_INFINITY
    // a check failed (the database was away): the next one that reaches it starts a grace
    let databaseAway = false
    // the wall and monotonic clocks at the previous look, to see the wall clock jump forward
    let lastWall = yield* Clock.currentTimeMillis
    let lastMonotonic = yield* Clock.currentTimeNanos

    /** The wall clock's forward jump since the last look (ms), or 0. */
    const forwardJump = Effect.gen(function*() {
      const wall = yield* Clock.currentTimeMillis
      const monotonic = yield* Clock.currentTimeNanos
      const ahead = (wall - lastWall) - Number(monotonic - lastMonotonic) / 1e6
      lastWall = wall
      lastMonotonic = monotonic
      return ahead > JUMP_TOLERANCE_MS ? ahead : 0
    })

    const sleepUntil = (now: number, at: number) => {
      wakeAt = at
      // woken early when a deadline is (re)scheduled: it may be the first one
      return Effect.raceFirst(Effect.sleep(Duration.millis(Math.max(0, at - now))), Queue.take(wake))
    }

    const sweep = Effect.gen(function*() {
      wakeAt = Number.NEGATIVE_INFINITY
      const now = yield* Clock.currentTimeMillis
      const jumped = yield* forwardJump
      if (jumped > 0) {
        graceEndsAt = Math.max(graceEndsAt, now + graceMs)
        yield* Effect.logWarning(
          `push deadlines: the wall clock jumped ${Math.round(jumped / 1000)} s forward; no push agent times out before ${graceMs / 1000} s from now`
        )
      }
      if (databaseAway) {
        const next = yield* repo.nextDeadline // reaches the database, or fails as before
        databaseAway = false
        graceEndsAt = Math.max(graceEndsAt, now + graceMs)
        if (Option.isSome(next) && next.value < graceEndsAt) {
          yield* Effect.logInfo(`push deadlines: the database answers again; no push agent times out before ${graceMs / 1000} s from now`)
        }
      }
      if (now < graceEndsAt) return yield* sleepUntil(now, graceEndsAt)
      yield* repo.clampDeadlines(now + graceMs)
      const expired = yield* repo.expireDeadlines(now)
      for (const agentId of expired) {
        yield* Effect.logWarning(`Agent ${agentId} has timed out: no attestation within quote_interval * 5; attestations are no longer accepted until it attests again or is reactivated`).pipe(
          Effect.annotateLogs({ agent_id: agentId })
        )
      }
      const next = yield* repo.nextDeadline
      const wait = Option.match(next, { onNone: () => MAX_SLEEP_MS, onSome: (d) => Math.min(MAX_SLEEP_MS, Math.max(0, d - now)) })
      yield* sleepUntil(now, now + wait)
    }).pipe(
      Effect.catchAll((e) =>
        Effect.suspend(() => {
          databaseAway = true
          return Effect.zipRight(Effect.logError(`push deadline check failed: ${e.message}`), Effect.sleep(Duration.seconds(2)))
        })
      )
    )

    yield* Effect.forkScoped(Effect.forever(sweep))

    /** A deadline was written: look again if it falls before the sweeper's next look. */
    const rescheduled = (deadlineAt: number) => deadlineAt < wakeAt ? Queue.offer(wake, undefined).pipe(Effect.asVoid) : Effect.void
    /** The verifier listens now: the grace of a restart runs from here (it only moves later). */
    const listening = Effect.flatMap(Clock.currentTimeMillis, (now) =>
      Effect.suspend(() => {
        graceEndsAt = Math.max(graceEndsAt, now + graceMs)
        return Queue.offer(wake, undefined)
      })).pipe(Effect.asVoid)
    return { rescheduled, listening } as const
  })
}) {}
