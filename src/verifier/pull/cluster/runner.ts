/**
 * This process as a runner of the cluster: @effect/cluster's socket runner (msgpack over mutual TLS
 * on `cluster_runner_host`:`cluster_runner_port`, RunnerTransport.ts and RunnerTls.ts), its runner
 * registry, shard locks and persisted messages in the verifier's PostgreSQL database (the
 * `cluster_*` tables, made on first start by one runner at a time), and runner health by ping.
 * Assembled from the same pieces as NodeClusterSocket.layer, but with the ShardingConfig built from
 * the `[verifier]` section alone (that layer also reads HOST, PORT and other bare environment
 * variables) and TLS in place of its plain TCP. Cluster mode on SQLite is refused at start, naming
 * the setting.
 */
import { type MessageStorage, RunnerAddress, RunnerHealth, Runners, type Sharding, ShardingConfig, SocketRunner, SqlMessageStorage, SqlRunnerStorage } from "@effect/cluster"
import { RpcSerialization } from "@effect/rpc"
import type { SqlClient } from "@effect/sql"
import { Duration, Layer, Option } from "effect"
import { chooseBackend } from "../../../db/Sql.js"
import type { VerifierOptions } from "../../../config/sections.js"
import type { ServerTls } from "../../../http/Tls.js"
import { ClusterModeRefused } from "./refused.js"
import { RunnerTls } from "./RunnerTls.js"
import { tlsClientProtocol, tlsSocketServer } from "./RunnerTransport.js"
import { builtOneAtATime } from "../../../db/startLock.js"
import { reasonsOf } from "../../../ops/errorText.js"

export { ClusterModeRefused }

/** The engine's settings from the section (the rest keep @effect/cluster's defaults). */
export const shardingConfigOf = (c: VerifierOptions): Partial<ShardingConfig.ShardingConfig["Type"]> => ({
  runnerAddress: Option.some(RunnerAddress.make(c.cluster_runner_host, c.cluster_runner_port)),
  shardsPerGroup: c.cluster_shards,
  runnerHealthCheckInterval: Duration.seconds(c.cluster_health_check_interval),
  // how soon a runner acts on another's death once it is recorded (the engine's 3 s, or sooner)
  refreshAssignmentsInterval: Duration.seconds(Math.min(3, Math.max(0.5, c.cluster_health_check_interval))),
  shardLockRefreshInterval: Duration.seconds(c.cluster_lock_refresh_interval),
  shardLockExpiration: Duration.seconds(c.cluster_lock_expiration),
  // a shard another runner still held when this one first tried is tried again at this pace (and
  // stored messages are read at it): the engine's 10 s left a moved agent unpolled for 11 s
  entityMessagePollInterval: Duration.seconds(Math.min(10, c.cluster_lock_refresh_interval)),
  // messages cross no process boundary when the entity is local: no need to pay for encoding them
  simulateRemoteSerialization: false
})

/**
 * The smallest pool a runner starts and works with: the engine keeps one connection for its shard
 * locks from the moment its storage is built, which happens while another holds the start lock
 * (db/startLock.ts) and the tables are made on a third; at run time the locks keep one and the loops
 * and the API share the rest. With 2 the start waits for itself forever.
 */
export const CLUSTER_POOL_MIN = 3

/** Why cluster mode cannot run on this section's database, or undefined when it can. */
export const clusterRefusal = (c: VerifierOptions): ClusterModeRefused | undefined => {
  const backend = chooseBackend(c, "verifier")
  if (!("_tag" in backend) || backend._tag !== "pg") {
    return new ClusterModeRefused({
      message:
        "[verifier] cluster = true needs a PostgreSQL database_url (postgres://…) that every runner shares; SQLite is one process's database. Set database_url, or cluster = false"
    })
  }
  if (c.database_pool_max < CLUSTER_POOL_MIN) {
    return new ClusterModeRefused({
      message: `[verifier] cluster = true needs database_pool_max of at least ${CLUSTER_POOL_MIN} (the engine's shard locks hold one connection, the start lock another, and the work needs a third); got ${c.database_pool_max}`
    })
  }
  return undefined
}

/**
 * The engine's message and runner storages in the verifier's database, their tables made by one
 * runner at a time (db/startLock.ts: two runners making them at the same instant stopped one of
 * them at start). A database that cannot take them stops the start, saying so.
 */
export const clusterStorages =
  builtOneAtATime("cluster tables", Layer.merge(SqlMessageStorage.layer, SqlRunnerStorage.layer)).pipe(
    Layer.mapError((e) =>
      new ClusterModeRefused({
        message: `[verifier] cluster = true: the cluster tables (cluster_*) cannot be made or read in database_url: ${reasonsOf(e)}`
      })
    )
  )

/**
 * Sharding (and Runners, MessageStorage) for this runner over the SqlClient in context, speaking to
 * the other runners over mutual TLS with the verifier's server identity (RunnerTransport.ts,
 * RunnerTls.ts).
 */
export const runnerLayer = (
  c: VerifierOptions
): Layer.Layer<Sharding.Sharding | Runners.Runners | MessageStorage.MessageStorage, ClusterModeRefused, SqlClient.SqlClient | ServerTls> => {
  const refused = clusterRefusal(c)
  if (refused !== undefined) return Layer.fail(refused)
  const address = RunnerAddress.make(c.cluster_runner_host, c.cluster_runner_port)
  const health = RunnerHealth.layerPing.pipe(Layer.provide(Runners.layerRpc), Layer.provide(tlsClientProtocol))
  // the engine's error says only "Open": say which setting to change
  const server = tlsSocketServer(address).pipe(
    Layer.mapError((e) =>
      new ClusterModeRefused({
        message: `[verifier] cluster_runner_port ${c.cluster_runner_port} on cluster_runner_host ${c.cluster_runner_host} cannot be listened on (${
          String((e as { cause?: unknown }).cause ?? e.reason)
        }); choose a free port for this runner`
      })
    )
  )
  return SocketRunner.layer.pipe(
    Layer.provide([server, tlsClientProtocol]),
    Layer.provide(health),
    Layer.provideMerge(clusterStorages),
    Layer.provide(ShardingConfig.layer(shardingConfigOf(c))),
    Layer.provide(RpcSerialization.layerMsgPack),
    Layer.provide(RunnerTls.fromServerTls)
  )
}
