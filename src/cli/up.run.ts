/**
 * How `attest up` runs: a data directory (./.attest), a generated server components CA with an
 * admin certificate, the registrar on SQLite, and N agents on simulated TPMs and simulated machines
 * that register and activate; the simulated TPMs' manufacturer CA is written to
 * tpm_cert_store/simulator-ca.pem. Prints where everything listens; Ctrl-C (SIGINT/SIGTERM) closes
 * every listener. A second start reuses the directory: same CA, same TPMs, same agent ids.
 */
import { NodeHttpClient } from "@effect/platform-node"
import { Console, Context, Effect, Either, Layer, Option, Schema } from "effect"
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { layer as agentLayer, RunningAgent } from "../agent/Agent.js"
import { layer as simulatedMachine } from "../agent/measurements/SimulatedMachine.js"
import { AgentStateFile, STATE_FILE } from "../agent/state.js"
import { BoundListeners } from "../../layers/HttpServers.js"
import { Logging } from "../../layers/Logging.js"
import { MetricsEndpoint } from "../../layers/Metrics.js"
import { Tracing } from "../../layers/Tracing.js"
import type { LogFormat } from "../config/operationsOptions.js"
import { sectionDefaults } from "../config/load.js"
import { type RegistrarOptions, registrarSection } from "../config/sections.js"
import { CA_FILES, initCa } from "../pki/ca.js"
import { RegistrarFromConfig } from "../registrar/fromConfig.js"
import { simulatorManufacturerCa, TpmSimulator } from "../../layers/TpmSimulator.js"
import { version } from "./version.js"

/** Where `attest up` puts the simulated TPMs' manufacturer CA, inside its data directory. */
export const SIMULATOR_CA_FILE = path.join("tpm_cert_store", "simulator-ca.pem")

export interface UpOptions {
  readonly dataDir: string
  readonly agents: number
  readonly host: string
  readonly registrarPort: number
  readonly registrarTlsPort: number
  readonly agentPort: number
  readonly verbose: boolean
  /** The registrar's metrics listener on `host` (0: off). */
  readonly metricsPort: number
  readonly logFormat: LogFormat
  /** OTLP/HTTP collector for traces ("" = none). */
  readonly otlpEndpoint: string
}

const readAgentId = (dir: string): string => {
  const file = path.join(dir, STATE_FILE)
  if (!fs.existsSync(file)) return crypto.randomUUID()
  const decoded = Schema.decodeUnknownEither(Schema.parseJson(AgentStateFile))(fs.readFileSync(file, "utf8"))
  return Either.isRight(decoded) ? decoded.right.agent_id : crypto.randomUUID()
}

/** The `[registrar]` section `attest up` runs its registrar with: everything under the data directory. */
export const upRegistrarSection = (o: UpOptions, dataDir: string): RegistrarOptions =>
  sectionDefaults(registrarSection, {
    ip: o.host,
    port: o.registrarPort,
    tls_port: o.registrarTlsPort,
    tls_dir: path.join(dataDir, "cv_ca"),
    ca_dir: path.join(dataDir, "cv_ca"),
    data_dir: path.join(dataDir, "registrar"),
    database_url: "",
    ek_ca_dir: path.dirname(path.join(dataDir, SIMULATOR_CA_FILE)),
    metrics_ip: o.host,
    metrics_port: o.metricsPort,
    log_format: o.logFormat,
    log_level: o.verbose ? "info" : "warning",
    otlp_endpoint: o.otlpEndpoint
  })

export const up = (o: UpOptions) => {
  // start-up lines for a person; in json and logfmt they are log lines too, so every line parses
  const say = Logging.say(o.logFormat)
  return Effect.gen(function*() {
    const dataDir = path.resolve(o.dataDir)
    const reused = fs.existsSync(path.join(dataDir, "cv_ca", CA_FILES.caCert))
    const caDir = path.join(dataDir, "cv_ca")
    yield* initCa({ dir: caDir })
    const read = (f: string) => fs.readFileSync(path.join(caDir, f), "utf8")
    const caPem = read(CA_FILES.caCert)
    yield* say(`attest up: data directory ${dataDir} (${reused ? "reused" : "new"})`)
    // the simulated TPMs' manufacturer CA, for a tenant's (or Keylime's) EK trust store
    const ekCaFile = path.join(dataDir, SIMULATOR_CA_FILE)
    yield* Effect.try({
      try: () => {
        fs.mkdirSync(path.dirname(ekCaFile), { recursive: true, mode: 0o755 })
        fs.writeFileSync(ekCaFile, simulatorManufacturerCa().pem, { mode: 0o644 })
      },
      catch: (e) => new Error(`cannot write ${ekCaFile}: ${e instanceof Error ? e.message : String(e)}`)
    })

    // the registrar exactly as `attest registrar` runs it, from a [registrar] section: TLS from the
    // CA directory (its CRL reloaded live, so `attest ca revoke` applies while up runs), EK trust
    // store = the directory holding the simulator CA, SQLite under the data directory
    const registrar = RegistrarFromConfig(upRegistrarSection(o, dataDir))
    const startRegistrar = Effect.gen(function*() {
      const ctx = yield* Layer.build(registrar)
      const bound = Context.get(ctx, BoundListeners)
      const metrics = Context.get(ctx, MetricsEndpoint)
      const http = bound.get("registrar-http")!
      const https = bound.get("registrar-https")!
      yield* say(`registrar  ${http.url}  (agents register here)`)
      yield* say(`registrar  ${https.url}  (admin API, mTLS)`)
      if (Option.isSome(metrics)) yield* say(`metrics    ${metrics.value}/metrics  (Prometheus)`)
      yield* say(`admin certificate ${path.join(caDir, CA_FILES.clientCert)}, key ${path.join(caDir, CA_FILES.clientKey)}, CA ${path.join(caDir, CA_FILES.caCert)}`)
      yield* say(`TPMs are SIMULATED (in-memory) and so are the machines they measure: this is a demonstration setup`)
      yield* say(`simulated TPM manufacturer CA ${ekCaFile} (for an EK trust store: tpm_cert_store, ek_ca_dir)`)
      return http.url
    })

    const startAgents = (registrarUrl: string) => Effect.forEach(
      Array.from({ length: o.agents }, (_, i) => i),
      (i) => {
        const dir = path.join(dataDir, "agents", `agent-${i + 1}`)
        const agentId = readAgentId(dir)
        fs.mkdirSync(dir, { recursive: true, mode: 0o700 })
        const layer = agentLayer({
          agentId,
          dataDir: dir,
          host: o.host,
          port: o.agentPort === 0 ? 0 : o.agentPort + i,
          registrarUrl,
          trustedClientCa: caPem,
          payload: { dir: path.join(dir, "secure"), extractZip: true },
          retry: { initialDelay: "100 millis", maxDelay: "1 second" }
        }).pipe(
          Layer.provide(simulatedMachine({ name: `agent-${i + 1}` })),
          Layer.provide(TpmSimulator.layer({ stateFile: path.join(dir, "simulated-tpm.json") })),
          Layer.provide(NodeHttpClient.layerUndici),
          // the agent annotates its own lines; this covers its TPM and machine too
          Layer.annotateLogs("agent_id", agentId)
        )
        return Layer.build(layer).pipe(
          Effect.map((ctx) => Context.get(ctx, RunningAgent)),
          Effect.tap((a) => say(`agent ${i + 1}  ${a.agentId}  registered and activated; serving on ${a.url}`)),
          Effect.tapError((e) => Console.error(`agent ${i + 1}  ${agentId}  did not start: ${"message" in e ? e.message : String(e)}`)),
          Effect.option
        )
      },
      { concurrency: "unbounded" }
    )

    // With the registrar's port known up front, the agents make their TPM keys while the registrar
    // opens its database, and register (with a short backoff) as soon as it listens.
    const started = o.registrarPort === 0
      ? yield* Effect.flatMap(startRegistrar, startAgents)
      : (yield* Effect.all([startRegistrar, startAgents(`http://${o.host.includes(":") ? `[${o.host}]` : o.host}:${o.registrarPort}`)], {
        concurrency: "unbounded"
      }))[1]
    const running = started.filter(Option.isSome).length
    yield* say(`ready: ${running} of ${o.agents} agents registered. Press Ctrl-C to stop.`)
    return yield* Effect.never
  }).pipe(
    Effect.scoped,
    Effect.ensuring(say("attest up: stopped")),
    Effect.provide(Tracing.layer({ endpoint: o.otlpEndpoint, serviceName: "attest-up", serviceVersion: version })),
    // the summary lines above are the interface; component logs only for warnings (a revocation
    // notice, a refused admin or activation: each naming its agent_id) and errors
    Effect.provide(Logging.layer({ log_format: o.logFormat, log_level: o.verbose ? "info" : "warning" }))
  )
}

/** The command's handler: `up` with its failure printed as one line. */
export const run = (o: UpOptions) => up(o).pipe(Effect.tapError((e) => Console.error(`attest up: ${"message" in e ? e.message : String(e)}`)))
