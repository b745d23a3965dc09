/**
 * What `attest verifier cluster status` prints (issue 24): every runner of the cluster with the
 * active pull agents whose loop it last took and the oldest verified quote among them, from the
 * verifier's own table (`owner_runner`, written when a loop takes an agent) beside the engine's
 * runner registry (`cluster_runners`). A runner that owns agents but is no longer registered is
 * listed as gone: its agents wait for the reconciler, and their age shows it whatever the engine
 * believes. Pure.
 */
import type { ClusterRunner, OwnerCount } from "./repo/FleetRepo.js"

export interface RunnerStatus {
  /** `host:port` (`cluster_runner_host:cluster_runner_port`). */
  readonly address: string
  /** registered and healthy, registered but unhealthy, or gone (owns agents, not registered). */
  readonly state: "healthy" | "unhealthy" | "gone"
  /** Seconds since its heartbeat; null when it is not registered. */
  readonly seconds_since_heartbeat: number | null
  /** Active pull agents whose loop it last took. */
  readonly agents: number
  /** Seconds since the oldest verified quote among them; null when it owns none. */
  readonly oldest_verified_quote_seconds: number | null
}

export interface ClusterStatus {
  readonly runners: ReadonlyArray<RunnerStatus>
  /** Active pull agents no runner has taken yet (or every one, in single-process mode). */
  readonly agents_without_runner: number
  readonly agents: number
  /** Seconds since the oldest verified quote among all active pull agents; null without any. */
  readonly oldest_verified_quote_seconds: number | null
}

const ageOf = (nowSeconds: number, at: number) => Math.max(0, nowSeconds - at)

export const clusterStatusOf = (runners: ReadonlyArray<ClusterRunner>, owners: ReadonlyArray<OwnerCount>, nowSeconds: number): ClusterStatus => {
  const byRunner = new Map(owners.filter((o) => o.runner !== null).map((o) => [o.runner!, o] as const))
  const listed: Array<RunnerStatus> = runners.map((r) => {
    const owned = byRunner.get(r.address)
    return {
      address: r.address,
      state: r.healthy ? "healthy" : "unhealthy",
      seconds_since_heartbeat: r.secondsSinceHeartbeat,
      agents: owned?.agents ?? 0,
      oldest_verified_quote_seconds: owned === undefined ? null : ageOf(nowSeconds, owned.oldestVerifiedQuote)
    }
  })
  const registered = new Set(runners.map((r) => r.address))
  for (const [address, owned] of byRunner) {
    if (!registered.has(address)) {
      listed.push({ address, state: "gone", seconds_since_heartbeat: null, agents: owned.agents, oldest_verified_quote_seconds: ageOf(nowSeconds, owned.oldestVerifiedQuote) })
    }
  }
  listed.sort((a, b) => a.address.localeCompare(b.address))
  const oldest = owners.length === 0 ? null : Math.min(...owners.map((o) => o.oldestVerifiedQuote))
  return {
    runners: listed,
    agents_without_runner: owners.find((o) => o.runner === null)?.agents ?? 0,
    agents: owners.reduce((n, o) => n + o.agents, 0),
    oldest_verified_quote_seconds: oldest === null ? null : ageOf(nowSeconds, oldest)
  }
}

/** The status as lines for a person: one row per runner, then the totals. */
export const clusterStatusLines = (s: ClusterStatus): ReadonlyArray<string> => {
  const secs = (n: number | null) => (n === null ? "-" : `${n} s`)
  const header = ["runner", "state", "heartbeat", "agents", "oldest verified quote"]
  const rows = s.runners.map((r) => [r.address, r.state, r.seconds_since_heartbeat === null ? "-" : `${r.seconds_since_heartbeat} s ago`, String(r.agents), secs(r.oldest_verified_quote_seconds)])
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((c) => c[i]!.length)))
  const line = (c: ReadonlyArray<string>) => c.map((v, i) => v.padEnd(widths[i]!)).join("  ").trimEnd()
  return [
    ...(rows.length === 0 ? ["no runner is registered and no agent has been taken by one (is cluster = true set on the verifiers of this database_url?)"] : [line(header), ...rows.map(line)]),
    `agents: ${s.agents} active pull agents, ${s.agents_without_runner} not taken by a runner yet`,
    `oldest verified quote: ${s.oldest_verified_quote_seconds === null ? "none (no active pull agent)" : `${s.oldest_verified_quote_seconds} s ago`}`
  ]
}
