/**
 * The `[verifier]` section → a running verifier: TLS and admins from src/http/Tls.ts (tls_dir
 * generate/default/path, server_key, server_cert, trusted_client_ca, trusted_client_crl with its
 * live reload), the database (SQLite under data_dir or database_url), the HTTPS listener, the
 * metrics listener (metrics_ip, metrics_port 9881; off at 0), both bounding slow clients
 * (client_header_timeout, client_request_timeout, keep_alive_timeout), and the pull loop given as
 * `poller` (PollerControl.none: nothing polled in this process).
 */
import { Layer } from "effect"
import { MetricsServer } from "../http/MetricsListener.js"
import { DbLive } from "../db/Sql.js"
import { ServerTlsWithAdmins } from "../http/Tls.js"
import { VerifierConfig } from "../config/services.js"
import { sectionDefaults } from "../config/load.js"
import { type VerifierOptions, verifierSection } from "../config/sections.js"
import { listenerTimeoutsLayer } from "../http/timeouts.js"
import { EarIssuer } from "./domain/earIssuer.js"
import { FreshnessGaugeLive } from "./domain/freshnessGauge.js"
import { VerifierClientTls } from "./pull/ClientTls.js"
import { AgentClientLive } from "./pull/AgentClient.js"
import { PollerLive, withLoopServices } from "./pull/Poller.js"
import { clusterPollerLayer } from "./pull/cluster/ClusterPoller.js"
import { PollerControl } from "./domain/PollerControl.js"
import { PolicyCache } from "./domain/policy/PolicyCache.js"
import { AgentRepo } from "./domain/repo/AgentRepo.js"
import { NotificationOutbox } from "./domain/repo/NotificationOutbox.js"
import { MbPolicyRepo, RuntimePolicyRepo } from "./domain/repo/PolicyRepo.js"
import { PushLayers, VerifierServerLive, type VerifierServerOptions } from "./Server.js"
import { PushDutiesLive } from "./push/PushDomain.js"

/** A `[verifier]` section from defaults and the options given (for embedding without a config file). */
export const verifierOptions = (overrides: Partial<VerifierOptions> = {}): VerifierOptions => sectionDefaults(verifierSection, overrides)

export const verifierServerOptions = (c: VerifierOptions): VerifierServerOptions => ({
  host: c.ip,
  port: c.port,
  authorizationProvider: c.authorization_provider,
  maxBodyBytes: c.max_upload_size
})

/**
 * What the pull loop is given: the verifier's repositories and the compiled-policy cache
 * (`policy_cache_size`), over the section (`VerifierConfig`) and the database.
 */
export const pollerDependencies = (c: VerifierOptions) =>
  Layer.mergeAll(
    AgentRepo.Default,
    RuntimePolicyRepo.Default,
    MbPolicyRepo.Default,
    NotificationOutbox.Default,
    PolicyCache.withCapacity(c.policy_cache_size)
  )

/**
 * The verifier with its TLS, admins, database, metrics listener and pull loop, from its config
 * section. The poller gets `pollerDependencies`, the section and the database; the loop's own
 * needs beyond those stay in the result's requirements.
 */
export const VerifierFromConfig = <E = never, R = never>(
  c: VerifierOptions,
  poller: Layer.Layer<PollerControl, E, R> = PollerControl.none as Layer.Layer<PollerControl, E, R>
) => {
  const base = Layer.merge(Layer.succeed(VerifierConfig, c), DbLive(c, "verifier"))
  return VerifierServerLive(verifierServerOptions(c)).pipe(
    Layer.provide(Layer.provide(poller, pollerDependencies(c))),
    Layer.provide(EarIssuer.fromSection(c)),
    Layer.provide(ServerTlsWithAdmins("verifier", c)),
    Layer.provide(base),
    Layer.merge(MetricsServer.fromSection(c, "verifier-metrics", "verifier")),
    Layer.merge(FreshnessGaugeLive.pipe(Layer.provide(base))),
    Layer.provide(listenerTimeoutsLayer(c))
  )
}

/**
 * The pull loop of a verifier process from its section, with the client identity it presents to
 * agents: PollerLive, or with `cluster = true` this runner's share of the cluster's agents
 * (pull/cluster/ClusterPoller.ts; refused on SQLite) and the cluster's push duties over this
 * process's push domain (PushLayers: the same layer the server is given, so built once).
 */
export const pollerFromConfig = (c: VerifierOptions) =>
  (c.cluster
    ? withLoopServices(clusterPollerLayer(c), AgentClientLive).pipe(Layer.provide(PushDutiesLive.pipe(Layer.provide(PushLayers))))
    : PollerLive).pipe(Layer.provide(VerifierClientTls.fromSection(c)))
