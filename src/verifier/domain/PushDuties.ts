/**
 * The push model's cluster-wide duties, as the cluster's one Singleton calls them (issue 24): the
 * push domain implements them (push/PushDomain.ts), cluster mode runs them on one runner at a time
 * (pull/cluster/PushDutiesSingleton.ts). Deadlines are not among them: any runner may sweep those,
 * as their expiry is one conditional UPDATE (push/Liveness.ts).
 */
import { Context, type Effect } from "effect"
import type { VerifierStoreError } from "./errors.js"

export interface PushDutiesShape {
  /**
   * Verdicts left in evaluating_evidence by runners not in `liveRunners` (addresses `host:port`),
   * or past verification_timeout whoever accepted them, judged again in this process (but those it
   * judges now); how many were started. A verdict run twice counts once: its completion is conditional.
   */
  readonly rejudgeOrphans: (liveRunners: ReadonlyArray<string>) => Effect.Effect<number, VerifierStoreError>
  /** Sessions whose challenge and token have both expired deleted; how many went (failures are logged). */
  readonly sweepSessions: Effect.Effect<number>
}

export class PushDuties extends Context.Tag("attest/verifier/PushDuties")<PushDuties, PushDutiesShape>() {}
