/**
 * This process as a runner of the cluster: @effect/cluster's socket runner (msgpack over TCP on
 * `cluster_runner_host`:`cluster_runner_port`), its runner registry, shard locks and persisted
 * messages in the verifier's PostgreSQL database (the `cluster_*` tables, made on first start), and
 * runner health by ping. Assembled here from the same pieces as NodeClusterSocket.layer, but with
 * the ShardingConfig built from the `[verifier]` section alone: that layer also reads HOST, PORT and
 * other bare environment variables. Cluster mode on SQLite is refused at start, naming the setting.
 */
import { type MessageStorage, RunnerAddress, RunnerHealth, Runners, type Sharding, ShardingConfig, SocketRunner, SqlMessageStorage, SqlRunnerStorage } from "@effect/cluster"
import { layerClientProtocol, layerSocketServer } from "@effect/platform-node/NodeClusterSocket"
import { RpcSerialization } from "@effect/rpc"
import type { SqlClient } from "@effect/sql"
import { Duration, Layer, Option, Schedule, Schema } from "effect"
import { chooseBackend } from "../../../db/Sql.js"
import type { VerifierOptions } from "../../../config/sections.js"

/** `cluster = true` with a database several processes cannot share, or a runner port that cannot be listened on. */
export class ClusterModeRefused extends Schema.TaggedError<ClusterModeRefused>()("ClusterModeRefused", {
  message: Schema.String
}) {}

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

/** Why cluster mode cannot run on this section's database, or undefined when it can. */
export const clusterRefusal = (c: VerifierOptions): ClusterModeRefused | undefined => {
  const backend = chooseBackend(c, "verifier")
  if ("_tag" in backend && backend._tag === "pg") return undefined
  return new ClusterModeRefused({
    message:
      "[verifier] cluster = true needs a PostgreSQL database_url (postgres://…) that every runner shares; SQLite is one process's database. Set database_url, or cluster = false"
  })
}

/**
 * The engine makes its tables at start with no lock: two runners starting at once can collide on
 * CREATE TABLE IF NOT EXISTS (PostgreSQL's catalogue says duplicate key). The loser tries again.
 */
const createdOnce = <A, E, R>(storage: Layer.Layer<A, E, R>) =>
  storage.pipe(Layer.retry(Schedule.spaced("1 second").pipe(Schedule.intersect(Schedule.recurs(5)))))

/** Sharding (and Runners, MessageStorage) for this runner over the SqlClient in context. */
export const runnerLayer = (
  c: VerifierOptions
): Layer.Layer<Sharding.Sharding | Runners.Runners | MessageStorage.MessageStorage, ClusterModeRefused, SqlClient.SqlClient> => {
  const refused = clusterRefusal(c)
  if (refused !== undefined) return Layer.fail(refused)
  const health = RunnerHealth.layerPing.pipe(Layer.provide(Runners.layerRpc), Layer.provide(layerClientProtocol))
  // the engine's error says only "Open": say which setting to change
  const server = layerSocketServer.pipe(
    Layer.mapError((e) =>
      new ClusterModeRefused({
        message: `[verifier] cluster_runner_port ${c.cluster_runner_port} on cluster_runner_host ${c.cluster_runner_host} cannot be listened on (${
          String((e as { cause?: unknown }).cause ?? e.reason)
        }); choose a free port for this runner`
      })
    )
  )
  return SocketRunner.layer.pipe(
    Layer.provide([server, layerClientProtocol]),
    Layer.provide(health),
    Layer.provideMerge(Layer.orDie(createdOnce(SqlMessageStorage.layer))),
    Layer.provide(Layer.orDie(createdOnce(SqlRunnerStorage.layer))),
    Layer.provide(ShardingConfig.layer(shardingConfigOf(c))),
    Layer.provide(RpcSerialization.layerMsgPack)
  )
}
