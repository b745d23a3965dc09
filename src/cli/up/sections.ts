/**
 * The config sections `attest up` runs its parts with: everything under the data directory (the
 * CA in cv_ca, SQLite files, the simulated TPMs' manufacturer CA as the EK trust store), on the
 * address it was given (loopback unless --expose-on-network: hosts.ts; the tenant reaches a
 * wildcard through loopback). The parts run exactly as `attest registrar`, `attest verifier` and
 * `attest tenant` would with these sections.
 */
import * as path from "node:path"
import type { LogFormat } from "../../config/operationsOptions.js"
import { sectionDefaults } from "../../config/load.js"
import { localReach } from "../../http/loopback.js"
import {
  type RegistrarOptions,
  registrarSection,
  type TenantOptions,
  tenantSection,
  type VerifierOptions,
  verifierSection
} from "../../config/sections.js"

/** Where `attest up` puts the simulated TPMs' manufacturer CA, inside its data directory. */
export const SIMULATOR_CA_FILE = path.join("tpm_cert_store", "simulator-ca.pem")

export interface UpOptions {
  readonly dataDir: string
  readonly agents: number
  /** Push-model agents (API 3.0, no listening port) started beside the pull agents. */
  readonly push: number
  /** Where the servers, agents and metrics listen: loopback unless `exposeOnNetwork` (hosts.ts). */
  readonly host: string
  /** Allows a `host` that is not loopback; the dashboard stays on loopback regardless. */
  readonly exposeOnNetwork: boolean
  readonly registrarPort: number
  readonly registrarTlsPort: number
  readonly verifierPort: number
  readonly agentPort: number
  readonly verbose: boolean
  /** The registrar's metrics listener on `host` (0: off). */
  readonly metricsPort: number
  /** The verifier's metrics listener on `host` (0: off). */
  readonly verifierMetricsPort: number
  readonly logFormat: LogFormat
  /** OTLP/HTTP collector for traces ("" = none). */
  readonly otlpEndpoint: string
  /** Seconds between quotes of one agent. */
  readonly quoteInterval: number
  /** Agents (number in the table or uuid) whose machine runs an unallowed executable once attested. */
  readonly tamper: ReadonlyArray<string>
  /** Start from an empty data directory. */
  readonly reset: boolean
  /** The web dashboard's port on `host`: undefined 8443 or the next free one, 0 any, -1 no dashboard. */
  readonly dashboardPort: number | undefined
  /** Verifier runners: 1, or more in cluster mode on the PostgreSQL `databaseUrl` (runners.ts). */
  readonly verifiers: number
  /** The verifier's database: "" for SQLite under the data directory, or postgres://… */
  readonly databaseUrl: string
}

/** One runner of `--verifiers N` above 1: its number (1-based) and its cluster port. */
export interface UpRunner {
  readonly index: number
  readonly clusterPort: number
}

const operations = (o: UpOptions) => ({
  metrics_ip: o.host,
  log_format: o.logFormat,
  log_level: o.verbose ? ("info" as const) : ("warning" as const),
  otlp_endpoint: o.otlpEndpoint
})

const ekCaDir = (dataDir: string) => path.dirname(path.join(dataDir, SIMULATOR_CA_FILE))

/** The `[registrar]` section `attest up` runs its registrar with. */
export const upRegistrarSection = (o: UpOptions, dataDir: string): RegistrarOptions =>
  sectionDefaults(registrarSection, {
    ip: o.host,
    port: o.registrarPort,
    tls_port: o.registrarTlsPort,
    tls_dir: path.join(dataDir, "cv_ca"),
    ca_dir: path.join(dataDir, "cv_ca"),
    data_dir: path.join(dataDir, "registrar"),
    database_url: "",
    ek_ca_dir: ekCaDir(dataDir),
    metrics_port: o.metricsPort,
    ...operations(o)
  })

/**
 * The `[verifier]` section: the same CA directory (server certificate, admin CA, and the client
 * certificate it presents to agents), measured boot judged by the `example` policy against each
 * machine's own reference state, on every quote so a changed boot shows at once.
 */
export const upVerifierSection = (o: UpOptions, dataDir: string, runner?: UpRunner): VerifierOptions =>
  sectionDefaults(verifierSection, {
    ip: o.host,
    // the first runner on --verifier-port, the others on any free port (and no metrics listener)
    port: runner === undefined || runner.index === 1 ? o.verifierPort : 0,
    tls_dir: path.join(dataDir, "cv_ca"),
    ca_dir: path.join(dataDir, "cv_ca"),
    data_dir: path.join(dataDir, "verifier"),
    database_url: o.databaseUrl,
    ek_ca_dir: ekCaDir(dataDir),
    quote_interval: o.quoteInterval,
    retry_interval: 1,
    measured_boot_policy_name: "example",
    ear_signing_key: "default",
    metrics_port: runner === undefined || runner.index === 1 ? o.verifierMetricsPort : 0,
    ...operations(o),
    ...(runner === undefined ? {} : { cluster: true, cluster_runner_host: localReach(o.host), cluster_runner_port: runner.clusterPort })
  })

/** The `[tenant]` section `attest up` enrols its agents with (the generated admin certificate). */
export const upTenantSection = (o: UpOptions, dataDir: string, ports: { readonly verifier: number; readonly registrar: number }): TenantOptions =>
  sectionDefaults(tenantSection, {
    verifier_ip: localReach(o.host),
    verifier_port: ports.verifier,
    registrar_ip: localReach(o.host),
    registrar_port: ports.registrar,
    tls_dir: "default",
    ca_dir: path.join(dataDir, "cv_ca"),
    ek_ca_dir: ekCaDir(dataDir),
    request_timeout: 30,
    // how often add --verify asks the agent whether V has arrived: the first quote is due at once
    retry_interval: 0.2,
    verify_timeout: 120,
    log_format: o.logFormat,
    log_level: o.verbose ? "info" : "warning"
  })
