/**
 * Cluster mode of the verifier (issue 24), one spread line in its section: several `attest verifier`
 * runners on one PostgreSQL database share the pull agents through @effect/cluster (each agent's loop
 * is an entity owned by one runner; a runner that dies hands its agents to the others). Off by
 * default: one process polls the agents of its `verifier_id` and no cluster table is created.
 * src/verifier/pull/cluster/ turns these options into the engine's ShardingConfig.
 */
import { boolean, integer, port, seconds, string } from "./option.js"

/**
 * @effect/cluster's defaults for the port and shards. A dead runner is noticed by the others' health
 * check (a minute by default in the engine) or, when that check ran on the dead runner itself, when
 * its heartbeat (renewed with its locks) is older than the lock expiration (35 s in the engine):
 * failover takes about the larger path plus a few seconds, so both are set to keep it under the
 * Keylime-style bound quote_interval * 5 = 10 s at the default quote_interval.
 */
export const CLUSTER_DEFAULTS = {
  cluster_runner_port: 34431,
  cluster_shards: 300,
  cluster_health_check_interval: 1,
  cluster_lock_refresh_interval: 2,
  cluster_lock_expiration: 6
} as const

export const clusterOptions = {
  cluster: boolean(
    false,
    "cluster mode: the pull agents are shared by every verifier runner on this database_url (PostgreSQL only; refused on SQLite), each agent polled by one runner, a dead runner's agents taken over by the others; verifier_id then names the agents for listing and no longer decides who polls them"
  ),
  cluster_runner_host: string("127.0.0.1", "cluster mode: the address other runners reach this runner at (its runner port listens there)"),
  cluster_runner_port: port(
    CLUSTER_DEFAULTS.cluster_runner_port,
    "cluster mode: port of this runner's messages from other runners, mutual TLS: each runner presents this section's server_cert and accepts only server certificates that chain to trusted_client_ca (admin and agent certificates are refused)"
  ),
  cluster_shards: integer(
    CLUSTER_DEFAULTS.cluster_shards,
    "cluster mode: shards the agents are spread over (every runner of a cluster must use the same number; more shards than runners spread them evenly)",
    { min: 1 }
  ),
  cluster_health_check_interval: seconds(
    CLUSTER_DEFAULTS.cluster_health_check_interval,
    "cluster mode: seconds between checks that the other runners answer; a runner that does not is declared dead and its agents move (most of the failover time; keep it well under quote_interval * 5)"
  ),
  cluster_lock_refresh_interval: seconds(CLUSTER_DEFAULTS.cluster_lock_refresh_interval, "cluster mode: seconds between renewals of this runner's shard locks and heartbeat in the database (at most a third of cluster_lock_expiration is used)"),
  cluster_lock_expiration: seconds(
    CLUSTER_DEFAULTS.cluster_lock_expiration,
    "cluster mode: seconds after which a runner that stopped renewing its heartbeat counts as gone and its shards move (a runner that stalls longer than this loses its agents for a while: their owner epoch keeps its late writes out)"
  )
} as const
