/**
 * A PoP token is bound to the enrolment it was issued for: an administrator's delete, stop,
 * reactivation, new enrolment or change of acceptance of an agent ends every session of that agent
 * at once. The sessions stay, inactive with the reason, so their tokens are refused (401) saying
 * why until the sweep deletes them; this process's token cache forgets the agent in the same step.
 * Another process sharing the database refuses them on the attestation path at once (its context
 * read and its accept check the session row). The v2 domain (Agents.ts, AgentAdmin.ts) calls it.
 */
import { Effect } from "effect"
import type { SessionEndReason } from "./rows.js"
import { PushRepo } from "./repo.js"
import { TokenCache } from "./tokenCache.js"

export class SessionEnds extends Effect.Service<SessionEnds>()("attest/verifier/push/SessionEnds", {
  dependencies: [PushRepo.Default, TokenCache.Default],
  effect: Effect.gen(function*() {
    const repo = yield* PushRepo
    const cache = yield* TokenCache

    /** Every session of `agentId` ends for `reason`; the number ended. */
    const end = Effect.fn("SessionEnds.end")(function*(agentId: string, reason: SessionEndReason) {
      const ended = yield* repo.endAgentSessions(agentId, reason)
      // after the store: an entry cached before goes, and a check that read the store before the
      // end does not cache what it saw (TokenCache.mark)
      cache.forgetAgent(agentId)
      if (ended > 0) yield* Effect.logInfo(`PoP sessions of agent ${agentId} ended (${reason}): its tokens are refused`).pipe(Effect.annotateLogs({ agent_id: agentId }))
      return ended
    })

    return { end } as const
  })
}) {}
