/**
 * Questions about the whole pull fleet, whatever `verifier_id` each agent carries: which agents must
 * have a live loop somewhere (cluster mode's reconciler, pull/cluster/Reconciler.ts), and how old
 * the oldest verified quote among the active ones is (the freshness gauge, domain/freshnessGauge.ts),
 * and which runner owns how many of them (`attest verifier cluster status`, domain/clusterStatus.ts).
 * Push agents (a push_agents row) are never polled and are left out of both.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { storeError } from "../errors.js"
import { ACTIVE_STATES, OperationalState } from "../../../attestation/states.js"

/** Active pull agents whose loop one runner (or none) last took. */
export interface OwnerCount {
  /** `host:port` of the runner; null when no runner took them (single-process mode). */
  readonly runner: string | null
  readonly agents: number
  /** Epoch seconds of the oldest verified quote among them (creation before the first). */
  readonly oldestVerifiedQuote: number
}

/** A runner as @effect/cluster registered it. */
export interface ClusterRunner {
  readonly address: string
  /** The engine's health flag (a runner others could not reach is marked unhealthy, then removed). */
  readonly healthy: boolean
  readonly secondsSinceHeartbeat: number
}

export class FleetRepo extends Effect.Service<FleetRepo>()("attest/verifier/FleetRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const active = [...ACTIVE_STATES]

    /**
     * Pull agents that may lack a loop: the active ones whose next poll (or, before the first, their
     * last change) is older than `staleBefore` (epoch seconds; a live loop keeps it ahead), the
     * active ones whose loop last ran on a runner not among `liveRunners` (its death is known before
     * its agents are late; none when the list is empty: an unread registry is no news), and the
     * TERMINATED whose loop deletes them. A live loop's agent is left out, so the reconciler's work
     * follows the agents in trouble, not the fleet.
     */
    const needingLoops = Effect.fn("FleetRepo.needingLoops")(function*(staleBefore: number, liveRunners: ReadonlyArray<string> = []) {
      const ownerGone = liveRunners.length === 0
        ? sql`1 = 0`
        : sql`(a.owner_runner IS NOT NULL AND NOT (${sql.in("a.owner_runner", [...liveRunners])}))`
      const rows = yield* sql<{ agent_id: string }>`SELECT a.agent_id FROM verifier_agents a
        WHERE (a.operational_state = ${OperationalState.TERMINATED}
            OR (${sql.in("a.operational_state", active)} AND (COALESCE(a.next_poll_at, a.updated_at) < ${staleBefore} OR ${ownerGone})))
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

    /**
     * Active pull agents by the runner whose loop last took them (`owner_runner`; null: no runner
     * took them, as in single-process mode): how many, and the oldest verified quote among them.
     */
    const owners = Effect.fn("FleetRepo.owners")(function*() {
      const rows = yield* sql<{ owner_runner: unknown; agents: unknown; oldest: unknown }>`SELECT a.owner_runner, COUNT(*) AS agents,
          MIN(CASE WHEN a.last_successful_attestation > 0 THEN a.last_successful_attestation ELSE a.created_at END) AS oldest
        FROM verifier_agents a
        WHERE ${sql.in("a.operational_state", active)}
          AND NOT EXISTS (SELECT 1 FROM push_agents p WHERE p.agent_id = a.agent_id)
        GROUP BY a.owner_runner ORDER BY a.owner_runner`.pipe(Effect.mapError(storeError("count agents by owner")))
      return rows.map((r): OwnerCount => ({
        runner: typeof r.owner_runner === "string" ? r.owner_runner : null,
        agents: Number(r.agents),
        oldestVerifiedQuote: Number(r.oldest)
      }))
    })

    /**
     * The runners @effect/cluster has registered (its `cluster_runners` table, made by the first
     * runner of cluster mode; PostgreSQL only): none before that, and none on SQLite. `address` is
     * `host:port`, as `owner_runner` spells it.
     */
    const clusterRunners = Effect.fn("FleetRepo.clusterRunners")(function*() {
      const exists = yield* sql.onDialectOrElse({
        pg: () => sql<{ t: unknown }>`SELECT to_regclass('cluster_runners') AS t`,
        orElse: () => Effect.succeed([{ t: null }])
      }).pipe(Effect.mapError(storeError("look for the cluster's runners")))
      if (exists[0]?.t === null || exists[0]?.t === undefined) return []
      const rows = yield* sql<{ address: unknown; healthy: unknown; heartbeat_age: unknown }>`SELECT address, healthy,
          EXTRACT(EPOCH FROM (NOW() - last_heartbeat)) AS heartbeat_age
        FROM cluster_runners ORDER BY address`.pipe(Effect.mapError(storeError("read the cluster's runners")))
      return rows.map((r): ClusterRunner => ({
        address: String(r.address),
        healthy: r.healthy === true || r.healthy === 1 || r.healthy === "t",
        secondsSinceHeartbeat: Math.max(0, Math.round(Number(r.heartbeat_age)))
      }))
    })

    /**
     * The runners the cluster holds alive, as `host:port`: healthy in the engine's registry with a
     * heartbeat younger than `expirationSeconds` (the engine's own rule: SqlRunnerStorage keeps the
     * runners whose heartbeat is younger than the shard-lock expiration). Cluster mode only (the
     * registry is PostgreSQL's `cluster_runners`, as pull/cluster/runner.ts builds it).
     */
    const liveRunners = Effect.fn("FleetRepo.liveRunners")(function*(expirationSeconds: number) {
      const rows = yield* sql<{ address: unknown }>`SELECT address FROM cluster_runners
        WHERE healthy AND last_heartbeat > NOW() - ${sql.literal(`INTERVAL '${Math.ceil(expirationSeconds)} seconds'`)}`.pipe(
        Effect.mapError(storeError("read the cluster's live runners"))
      )
      return rows.map((r) => String(r.address))
    })

    return { needingLoops, oldestVerifiedQuote, owners, clusterRunners, liveRunners } as const
  })
}) {}
