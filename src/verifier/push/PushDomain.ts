/**
 * The push model's domain as one layer: sessions (with the sweep of expired ones), attestations
 * (with their background verifications), liveness deadlines and the store. Needs what the verifier's own services stand
 * on: SqlClient (migrations applied), VerifierConfig, AgentRepo, the policy repositories and a
 * PolicyCache. src/verifier/Server.ts provides it beside the v2 domain and serves PushGroup
 * (http/v3/PushApi.ts, part of VerifierApi) with PushHttpLive; PushClientIdentity (http/v3/auth.ts) is the
 * verifier's ClientIdentity, so agents read their v2 status with their token too.
 */
import { Effect, Layer } from "effect"
import { PushDuties } from "../domain/PushDuties.js"
import { Attestations } from "./Attestations.js"
import { Liveness } from "./Liveness.js"
import { PushRepo } from "../domain/pushStore/repo.js"
import { Sessions } from "./Sessions.js"
import { SessionSweep } from "./SessionSweep.js"

export const PushDomainLive = Attestations.Default.pipe(
  Layer.provideMerge(Layer.mergeAll(Sessions.Default, Liveness.Default, SessionSweep.Default)),
  Layer.provideMerge(PushRepo.Default)
)

/** The cluster's push duties (domain/PushDuties.ts) over the push domain's services. */
export const PushDutiesLive = Layer.effect(
  PushDuties,
  Effect.gen(function*() {
    const attestations = yield* Attestations
    const sessions = yield* SessionSweep
    return PushDuties.of({ rejudgeOrphans: attestations.rejudgeOrphans, sweepSessions: sessions.sweep })
  })
)
