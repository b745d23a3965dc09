/**
 * `attest up`: everything in one process on embedded defaults, the first thing a new user runs
 * (registrar and verifier on SQLite, generated CA, N agents on simulated TPMs and machines, each
 * enrolled through the tenant's `add`, then a live status table). `--push N` adds N push-model
 * agents, attested by the same verifier.
 */
import { Command, Options } from "@effect/cli"
import { Option } from "effect"
import { LOG_FORMATS, REGISTRAR_METRICS_PORT, VERIFIER_METRICS_PORT } from "../config/operationsOptions.js"
import { lazy } from "./lazy.js"

export const upCommand = Command.make(
  "up",
  {
    dataDir: Options.directory("data-dir").pipe(Options.withDescription("where everything is kept"), Options.withDefault(".attest")),
    agents: Options.integer("agents").pipe(Options.withDescription("number of simulated pull-model agents (the verifier asks them for quotes)"), Options.withDefault(3)),
    push: Options.integer("push").pipe(
      Options.withDescription("number of simulated push-model agents (API 3.0: no listening port, they send evidence every --quote-interval to the same verifier, which attests both kinds; 0: none)"),
      Options.withDefault(0)
    ),
    host: Options.text("host").pipe(
      Options.withDescription("address the registrar, the verifier, the agents and the metrics listeners listen on: a loopback address (127.0.0.1, ::1, localhost); another only with --expose-on-network"),
      Options.withDefault("127.0.0.1")
    ),
    exposeOnNetwork: Options.boolean("expose-on-network").pipe(
      Options.withDescription("allow a --host that is not loopback (e.g. 0.0.0.0): the registrar, the verifier, the agents and the metrics listeners then accept connections from the network; the dashboard stays on 127.0.0.1")
    ),
    registrarPort: Options.integer("registrar-port").pipe(Options.withDescription("registrar HTTP port (0: any free port)"), Options.withDefault(8890)),
    registrarTlsPort: Options.integer("registrar-tls-port").pipe(Options.withDescription("registrar HTTPS port (0: any free port)"), Options.withDefault(8891)),
    verifierPort: Options.integer("verifier-port").pipe(Options.withDescription("verifier HTTPS port (0: any free port)"), Options.withDefault(8881)),
    quoteInterval: Options.integer("quote-interval").pipe(Options.withDescription("seconds between quotes (pull) or attestations (push) of one agent"), Options.withDefault(2)),
    tamper: Options.text("tamper").pipe(
      Options.withDescription("once it has attested, make this agent's machine (its number in the table, or its uuid; pull or push) run an executable its policy does not allow; repeatable"),
      Options.repeated
    ),
    dashboardPort: Options.integer("dashboard-port").pipe(
      Options.withDescription("web dashboard port, on loopback only: --host when it is loopback, else 127.0.0.1 (default 8443 or the next free one; 0: any free port; -1: no dashboard)"),
      Options.optional,
      Options.map(Option.getOrUndefined)
    ),
    verifiers: Options.integer("verifiers").pipe(
      Options.withDescription(
        "verifier runners: above 1, in cluster mode (each pull agent polled by one runner, a stopped runner's agents taken over by the others); they share the PostgreSQL database of --database-url (refused on SQLite)"
      ),
      Options.withDefault(1)
    ),
    databaseUrl: Options.text("database-url").pipe(
      Options.withDescription("the verifier's database: empty for SQLite in the data directory, or postgres://… (needed by --verifiers above 1; the registrar stays on SQLite)"),
      Options.withDefault("")
    ),
    reset: Options.boolean("reset").pipe(Options.withDescription("start fresh: remove the data directory first (new CA, TPMs, agents and databases)")),
    verbose: Options.boolean("verbose").pipe(Options.withDescription("also print every component's log lines")),
    agentPort: Options.integer("agent-port").pipe(Options.withDescription("first agent's HTTPS port; the others follow (0: any free ports)"), Options.withDefault(9002)),
    metricsPort: Options.integer("metrics-port").pipe(
      Options.withDescription("registrar's Prometheus /metrics port, plain HTTP on --host (0: off)"),
      Options.withDefault(REGISTRAR_METRICS_PORT)
    ),
    verifierMetricsPort: Options.integer("verifier-metrics-port").pipe(
      Options.withDescription("verifier's Prometheus /metrics port, plain HTTP on --host (0: off)"),
      Options.withDefault(VERIFIER_METRICS_PORT)
    ),
    logFormat: Options.choice("log-format", LOG_FORMATS).pipe(Options.withDescription("component log lines: pretty, json or logfmt"), Options.withDefault("pretty" as const)),
    otlpEndpoint: Options.text("otlp-endpoint").pipe(
      Options.withDescription("OTLP/HTTP collector base URL that traces are sent to (empty: none)"),
      Options.withDefault("")
    )
  },
  lazy(() => import("./up.run.js"), (m) => m.run)
).pipe(Command.withDescription("Start a registrar, a verifier and simulated agents in one process on embedded defaults (./.attest, SQLite, generated CA), enrol the agents and show their attestation live."))
