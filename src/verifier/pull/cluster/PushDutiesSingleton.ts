/**
 * The push model's duties in cluster mode (issue 24), one Singleton for the cluster beside the
 * pull-agent reconciler (it moves with its shard when its runner dies):
 * - every few seconds, the verdicts a dead runner accepted with 202 and never recorded are judged
 *   again here (PushDuties.rejudgeOrphans): a runner is alive while the cluster's runner registry
 *   holds it healthy with a fresh heartbeat (the engine's own rule: SqlRunnerStorage keeps runners
 *   whose heartbeat is younger than the lock expiration). A slow runner taken for dead, or two
 *   Singletons overlapping during a move, judge a verdict twice at worst, and it counts once (the
 *   completion is conditional: domain/pushStore/attestationStatements.ts);
 * - every minute, the expired sessions are deleted (PushDuties.sweepSessions).
 * Push agents need no entity: any runner answers their requests, and any runner sweeps their
 * deadlines (one conditional UPDATE each: push/Liveness.ts).
 */
import { Singleton } from "@effect/cluster"
import { SqlClient } from "@effect/sql"
import { Duration, Effect, Schedule } from "effect"
import type { VerifierOptions } from "../../../config/sections.js"
import { PushDuties } from "../../domain/PushDuties.js"

/** How often verdicts left by dead runners are looked for (their agents get 503 verification_in_progress meanwhile). */
const ORPHANS_EVERY = Duration.seconds(3)
/** How often expired sessions are deleted (as SessionSweep does in a single process). */
const SESSIONS_EVERY = Duration.minutes(1)

/**
 * The runners the cluster holds alive, as `host:port` (the address judged_by records). Read from the
 * engine's registry table (`cluster_runners`, SqlRunnerStorage's default prefix, as runner.ts builds it).
 */
const liveRunners = (c: VerifierOptions) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ address: string }>`SELECT address FROM cluster_runners
      WHERE healthy AND last_heartbeat > NOW() - ${sql.literal(`INTERVAL '${Math.ceil(c.cluster_lock_expiration)} seconds'`)}`
    return rows.map((r) => String(r.address))
  })

/** The Singleton; it needs the push domain's PushDuties and the SqlClient beside the runner's Sharding. */
export const PushDutiesSingleton = (c: VerifierOptions) =>
  Singleton.make(
    "PushDuties",
    Effect.gen(function*() {
      const duties = yield* PushDuties
      const rejudge = liveRunners(c).pipe(
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
