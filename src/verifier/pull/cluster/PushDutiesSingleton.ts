/**
 * The push model's duties in cluster mode (issue 24), one Singleton for the cluster beside the
 * pull-agent reconciler (it moves with its shard when its runner dies):
 * - every few seconds, the verdicts a dead runner accepted with 202 and never recorded are judged
 *   again here (PushDuties.rejudgeOrphans): a runner is alive while the cluster's runner registry
 *   holds it healthy with a fresh heartbeat (FleetRepo.liveRunners). A slow runner taken for dead, or two
 *   Singletons overlapping during a move, judge a verdict twice at worst, and it counts once (the
 *   completion is conditional: domain/pushStore/attestationStatements.ts);
 * - every minute, the expired sessions are deleted (PushDuties.sweepSessions).
 * Push agents need no entity: any runner answers their requests, and any runner sweeps their
 * deadlines (one conditional UPDATE each: push/Liveness.ts).
 */
import { Singleton } from "@effect/cluster"
import { Duration, Effect, Schedule } from "effect"
import type { VerifierOptions } from "../../../config/sections.js"
import { PushDuties } from "../../domain/PushDuties.js"
import { FleetRepo } from "../../domain/repo/FleetRepo.js"

/** How often verdicts left by dead runners are looked for (their agents get 503 verification_in_progress meanwhile). */
const ORPHANS_EVERY = Duration.seconds(3)
/** How often expired sessions are deleted (as SessionSweep does in a single process). */
const SESSIONS_EVERY = Duration.minutes(1)

/** The Singleton; it needs the push domain's PushDuties and FleetRepo beside the runner's Sharding. */
export const PushDutiesSingleton = (c: VerifierOptions) =>
  Singleton.make(
    "PushDuties",
    Effect.gen(function*() {
      const duties = yield* PushDuties
      const fleet = yield* FleetRepo
      const rejudge = fleet.liveRunners(c.cluster_lock_expiration).pipe(
        Effect.flatMap(duties.rejudgeOrphans),
        Effect.tap((n) => n > 0 ? Effect.logInfo(`cluster: ${n} push verdict(s) left by a runner that is gone judged again here`) : Effect.void),
        Effect.catchAllCause((cause) => Effect.logWarning("cluster: orphaned push verdicts not looked for", cause))
      )
      yield* Effect.logInfo("cluster: the push duties run on this runner")
      yield* Effect.all([
        Effect.repeat(rejudge, Schedule.spaced(ORPHANS_EVERY)),
        Effect.repeat(duties.sweepSessions, Schedule.spaced(SESSIONS_EVERY))
      ], { concurrency: "unbounded", discard: true })
    })
  )
