/**
 * Expired sessions go (issue 22): a fiber of the push domain deletes, every minute (Clock) and once
 * at start, the sessions whose challenge and token have both expired, ended ones included. Unproved
 * sessions are never stored (push/challenges.ts), so what it deletes is bounded by the proofs
 * agents made with their AKs. In cluster mode no runner sweeps by itself: the cluster's push duties
 * (one Singleton, src/verifier/pull/cluster/PushDutiesSingleton.ts) call `sweep`.
 */
import { Clock, Duration, Effect, Schedule } from "effect"
import { VerifierConfig } from "../../config/services.js"
import { PushRepo } from "../domain/pushStore/repo.js"

/** How often expired sessions are deleted. */
export const SESSION_SWEEP_INTERVAL = Duration.minutes(1)

export class SessionSweep extends Effect.Service<SessionSweep>()("attest/verifier/push/SessionSweep", {
  scoped: Effect.gen(function*() {
    const repo = yield* PushRepo
    /** Deletes the sessions expired at this moment; how many went. */
    const sweep = Effect.gen(function*() {
      const deleted = yield* repo.deleteExpiredSessions(yield* Clock.currentTimeMillis)
      if (deleted > 0) yield* Effect.logDebug(`${deleted} expired push session(s) deleted`)
      return deleted
    }).pipe(Effect.catchAll((e) => Effect.as(Effect.logWarning(`deleting expired push sessions failed: ${e.message}`), 0)))
    if (!(yield* VerifierConfig).cluster) yield* Effect.forkScoped(Effect.repeat(sweep, Schedule.spaced(SESSION_SWEEP_INTERVAL)))
    return { sweep } as const
  })
}) {}
