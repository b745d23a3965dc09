/**
 * Questions about the whole pull fleet, whatever `verifier_id` each agent carries: which agents must
 * have a live loop somewhere (cluster mode's reconciler, pull/cluster/Reconciler.ts), and how old
 * the oldest verified quote among the active ones is (the freshness gauge, domain/freshnessGauge.ts).
 * Push agents (a push_agents row) are never polled and are left out of both.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { storeError } from "../errors.js"
import { ACTIVE_STATES, OperationalState } from "../../../attestation/states.js"

export class FleetRepo extends Effect.Service<FleetRepo>()("attest/verifier/FleetRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const active = [...ACTIVE_STATES]

    /** Pull agents a loop must run for: the active ones, and the TERMINATED whose loop deletes them. */
    const needingLoops = Effect.fn("FleetRepo.needingLoops")(function*() {
      const rows = yield* sql<{ agent_id: string }>`SELECT a.agent_id FROM verifier_agents a
        WHERE ${sql.in("a.operational_state", [...active, OperationalState.TERMINATED])}
          AND NOT EXISTS (SELECT 1 FROM push_agents p WHERE p.agent_id = a.agent_id)
        ORDER BY a.seq, a.agent_id`.pipe(Effect.mapError(storeError("list agents needing a loop")))
      return rows.map((r) => String(r.agent_id))
    })

    /**
     * Epoch seconds of the oldest verified quote among active pull agents (an agent never verified
     * counts from its creation); None without active pull agents.
     */
    const oldestVerifiedQuote = Effect.fn("FleetRepo.oldestVerifiedQuote")(function*() {
      const rows = yield* sql<{ oldest: unknown }>`SELECT MIN(CASE WHEN a.last_successful_attestation > 0
          THEN a.last_successful_attestation ELSE a.created_at END) AS oldest
        FROM verifier_agents a
        WHERE ${sql.in("a.operational_state", active)}
          AND NOT EXISTS (SELECT 1 FROM push_agents p WHERE p.agent_id = a.agent_id)`.pipe(
        Effect.mapError(storeError("read the oldest verified quote"))
      )
      const oldest = rows[0]?.oldest
      return oldest === null || oldest === undefined ? Option.none<number>() : Option.some(Number(oldest))
    })

    return { needingLoops, oldestVerifiedQuote } as const
  })
}) {}
