/**
 * How `attest up` runs: a data directory (./.attest), a generated server components CA with an
 * admin certificate, the registrar and the verifier on SQLite, and N agents on simulated TPMs and
 * simulated machines that register and activate, each then enrolled through the tenant's own `add`
 * (identity quote, U to the agent, V and policies to the verifier, V delivery verified) with a
 * runtime policy from its IMA list and a measured-boot reference state from its boot log. Then a
 * live status table until Ctrl-C (SIGINT/SIGTERM), which closes every listener. A second start
 * reuses the directory: same CA, same TPMs, same agent ids, and the verifier resumes its agents.
 * `--push N` adds N push agents (API 3.0, no listening port), enrolled at the same verifier as push
 * agents (`attestation_model: push`): one verifier attests both kinds. `--verifiers N` starts N
 * verifier runners in cluster mode on the PostgreSQL `--database-url` (up/runners.ts).
 */
import { NodeHttpClient } from "@effect/platform-node"
import { Console, Context, Effect, Either, Layer, Option, Schema } from "effect"
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { layer as agentLayer, RunningAgent } from "../agent/Agent.js"
import { MeasurementSource } from "../agent/measurements/MeasurementSource.js"
import { layer as simulatedMachine, SimulatedMachine } from "../agent/measurements/SimulatedMachine.js"
import { AgentStateFile, STATE_FILE } from "../agent/state.js"
import { BoundListeners } from "../http/HttpServers.js"
import { Logging } from "../ops/Logging.js"
import { MetricsEndpoint } from "../http/MetricsListener.js"
import { Tracing } from "../ops/Tracing.js"
import { DashboardLive, DashboardUrl } from "../dashboard/Dashboard.js"
import { CA_FILES, initCa } from "../pki/ca.js"
import { RegistrarFromConfig } from "../registrar/fromConfig.js"
import { connect } from "../tenant/connect.js"
import { settingsFrom } from "../tenant/settings.js"
import { simulatorManufacturerCa, TpmSimulator } from "../tpm/simulator/TpmSimulator.js"
import { pollerFromConfig, VerifierFromConfig } from "../verifier/fromConfig.js"
import { VERIFIER_LISTENER } from "../verifier/Server.js"
import { enrol, type UpAgent } from "./up/enrol.js"
import { enrolPush } from "./up/enrolPush.js"
import { EXPOSE_FLAG, upHosts } from "./up/hosts.js"
import { startPushAgents } from "./up/pushAgents.js"
import { checkVerifiers, freePort } from "./up/runners.js"
import { SIMULATOR_CA_FILE, type UpOptions, type UpRunner, upRegistrarSection, upTenantSection, upVerifierSection } from "./up/sections.js"
import { type LiveRegion, makeLiveRegion, regionConsole } from "./up/liveRegion.js"
import { watchStatus } from "./up/status.js"
import { UsageError } from "../config/usageError.js"
import { version } from "../ops/version.js"

export { SIMULATOR_CA_FILE, type UpOptions, upRegistrarSection } from "./up/sections.js"

const readAgentId = (dir: string): string => {
  const file = path.join(dir, STATE_FILE)
  if (!fs.existsSync(file)) return crypto.randomUUID()
  const decoded = Schema.decodeUnknownEither(Schema.parseJson(AgentStateFile))(fs.readFileSync(file, "utf8"))
  return Either.isRight(decoded) ? decoded.right.agent_id : crypto.randomUUID()
}

const bracket = (host: string) => (host.includes(":") ? `[${host}]` : host)

/**
 * On a terminal with pretty logs, the live table's region owns the bottom of the screen from the
 * start: every line up prints (start-up lines, log lines, messages) goes above the table through
 * the region's Console; a resize redraws. Elsewhere, the ordinary Console and change lines.
 */
const withRegion = <A, E, R>(interactive: boolean, body: (region: LiveRegion | undefined) => Effect.Effect<A, E, R>) =>
  !interactive || process.stdout.isTTY !== true
    ? body(undefined)
    : Effect.acquireUseRelease(
      Effect.sync(() => {
        const region = makeLiveRegion(process.stdout)
        const onResize = () => region.resize()
        process.stdout.on("resize", onResize)
        return { region, onResize }
      }),
      ({ region }) => body(region).pipe(Effect.withConsole(regionConsole(region))),
      ({ onResize, region }) =>
        Effect.sync(() => {
          process.stdout.off("resize", onResize)
          region.close()
        })
    )

export const up = (o: UpOptions) => {
  // start-up lines for a person; in json and logfmt they are log lines too, so every line parses
  const say = Logging.say(o.logFormat)
  return withRegion(o.logFormat === "pretty", (region) => Effect.gen(function*() {
    if (!Number.isInteger(o.push) || o.push < 0) return yield* new UsageError({ message: `--push ${o.push}: must be a number of push agents, 0 or more` })
    for (const t of o.tamper) {
      const n = /^\d+$/.test(t.trim()) ? Number(t.trim()) : undefined
      if (n !== undefined && (n < 1 || n > o.agents + o.push)) {
        return yield* new UsageError({ message: `--tamper ${t}: no such agent; give its number 1-${o.agents + o.push} (or its uuid)` })
      }
    }
    const runners = yield* checkVerifiers(o)
    const hosts = upHosts(o.host, o.exposeOnNetwork)
    if (Either.isLeft(hosts)) return yield* new UsageError({ message: hosts.left })
    const { reach, dashboard: dashboardHost, exposed } = hosts.right
    const started = Date.now()
    const dataDir = path.resolve(o.dataDir)
    if (o.reset && fs.existsSync(dataDir)) {
      yield* Effect.try({
        try: () => fs.rmSync(dataDir, { recursive: true, force: true }),
        catch: (e) => new Error(`--reset: cannot remove ${dataDir}: ${e instanceof Error ? e.message : String(e)}`)
      })
    }
    const reused = fs.existsSync(path.join(dataDir, "cv_ca", CA_FILES.caCert))
    const caDir = path.join(dataDir, "cv_ca")
    // an exposed address other than a wildcard is how the tenant reaches the servers: in their certificate (a new CA)
    yield* initCa({ dir: caDir, ...(exposed && reach === o.host ? { serverNames: [o.host] } : {}) })
    const caPem = fs.readFileSync(path.join(caDir, CA_FILES.caCert), "utf8")
    yield* say(`attest up: data directory ${dataDir} (${reused ? "reused" : o.reset ? "reset" : "new"})`)
    if (exposed) {
      yield* say(`attest up: ${EXPOSE_FLAG}: the registrar, the verifier, the agents and the metrics listeners accept connections from the network on ${o.host}; the dashboard stays on ${dashboardHost}`)
    }
    // the simulated TPMs' manufacturer CA: the EK trust store of registrar, verifier and tenant
    const ekCaFile = path.join(dataDir, SIMULATOR_CA_FILE)
    yield* Effect.try({
      try: () => {
        fs.mkdirSync(path.dirname(ekCaFile), { recursive: true, mode: 0o755 })
        fs.writeFileSync(ekCaFile, simulatorManufacturerCa().pem, { mode: 0o644 })
      },
      catch: (e) => new Error(`cannot write ${ekCaFile}: ${e instanceof Error ? e.message : String(e)}`)
    })

    // registrar and verifier exactly as `attest registrar` / `attest verifier` run them, from their
    // sections: TLS from the CA directory (CRL reloaded live), SQLite under the data directory
    const startRegistrar = Effect.gen(function*() {
      const ctx = yield* Layer.build(RegistrarFromConfig(upRegistrarSection(o, dataDir)))
      const bound = Context.get(ctx, BoundListeners)
      const http = bound.get("registrar-http")!
      const https = bound.get("registrar-https")!
      yield* say(`registrar  ${http.url}  (agents register here)`)
      yield* say(`registrar  ${https.url}  (admin API, mTLS)`)
      const metrics = Context.get(ctx, MetricsEndpoint)
      if (Option.isSome(metrics)) yield* say(`metrics    ${metrics.value}/metrics  (registrar, Prometheus)`)
      // this process's agents reach it through loopback when it listens on every interface
      return { http: `http://${bracket(reach)}:${http.port}`, https }
    })
    const startRunner = (runner?: UpRunner) =>
      Effect.gen(function*() {
        const section = upVerifierSection(o, dataDir, runner)
        const ctx = yield* Layer.build(VerifierFromConfig(section, pollerFromConfig(section)))
        const listener = Context.get(ctx, BoundListeners).get(VERIFIER_LISTENER)!
        yield* runner === undefined
          ? say(`verifier   ${listener.url}  (admin API, mTLS; quotes every ${o.quoteInterval} s)`)
          : say(`verifier ${runner.index}  ${listener.url}  (admin API, mTLS; cluster runner ${section.cluster_runner_host}:${runner.clusterPort})`)
        const metrics = Context.get(ctx, MetricsEndpoint)
        if (Option.isSome(metrics)) yield* say(`metrics    ${metrics.value}/metrics  (verifier, Prometheus)`)
        return listener
      })
    // --verifiers N: the runners one after the other (each joins the cluster the first made); the
    // tenant and the dashboard use the first, and any runner polls any agent
    const startVerifier = runners === 1 ? startRunner() : Effect.gen(function*() {
      yield* say(`verifier   cluster mode: ${runners} runners on one PostgreSQL database; quotes every ${o.quoteInterval} s, each agent polled by one runner`)
      const first = yield* startRunner({ index: 1, clusterPort: yield* freePort(reach) })
      for (let index = 2; index <= runners; index++) yield* startRunner({ index, clusterPort: yield* freePort(reach) })
      return first
    })

    // push agents send their evidence to the same verifier: enrolled as push agents, never polled
    const startPush = (registrarUrl: string, verifierUrl: string) =>
      Effect.gen(function*() {
        if (o.push <= 0) return []
        const agents = yield* startPushAgents({
          firstNumber: o.agents + 1,
          count: o.push,
          dataDir,
          host: reach,
          contactPort: (i) => (o.agentPort === 0 ? 9002 : o.agentPort) + o.agents + i,
          registrarUrl,
          verifierUrl,
          verifierCa: caPem,
          intervalSeconds: o.quoteInterval,
          agentIdIn: readAgentId
        })
        for (const a of agents) yield* say(`agent ${a.n}  ${a.agentId}  push agent started (no listening port; evidence to ${verifierUrl})`)
        return agents
      })

    const startAgents = (registrarUrl: string) =>
      Effect.forEach(
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
            // the machine stays in the context: its lists make the policies, and --tamper uses it
            Layer.provideMerge(simulatedMachine({ name: `agent-${i + 1}` })),
            Layer.provide(TpmSimulator.layer({ stateFile: path.join(dir, "simulated-tpm.json") })),
            Layer.provide(NodeHttpClient.layerUndici),
            // the agent annotates its own lines; this covers its TPM and machine too
            Layer.annotateLogs("agent_id", agentId)
          )
          return Layer.build(layer).pipe(
            Effect.map((ctx): UpAgent => ({
              n: i + 1,
              dir,
              agent: Context.get(ctx, RunningAgent),
              machine: Context.get(ctx, SimulatedMachine),
              source: Context.get(ctx, MeasurementSource)
            })),
            Effect.tap((a) => say(`agent ${a.n}  ${a.agent.agentId}  registered and activated; serving on ${a.agent.url}`)),
            Effect.tapError((e) => Console.error(`agent ${i + 1}  ${agentId}  did not start: ${"message" in e ? e.message : String(e)}`)),
            Effect.option
          )
        },
        { concurrency: "unbounded" }
      )

    // With the registrar's port known up front, the agents make their TPM keys while the registrar
    // and verifier open their databases, and register (with a short backoff) as soon as it listens.
    const [registrar, verifier, agentResults, pushAgents] = o.registrarPort === 0
      ? yield* Effect.gen(function*() {
        const [r, v] = yield* Effect.all([startRegistrar, startVerifier], { concurrency: "unbounded" })
        const [a, p] = yield* Effect.all([startAgents(r.http), startPush(r.http, `https://${bracket(reach)}:${v.port}`)], { concurrency: "unbounded" })
        return [r, v, a, p] as const
      })
      : yield* Effect.gen(function*() {
        const registrarUrl = `http://${bracket(reach)}:${o.registrarPort}`
        const [r, v, a] = yield* Effect.all([startRegistrar, startVerifier, startAgents(registrarUrl)], { concurrency: "unbounded" })
        return [r, v, a, yield* startPush(registrarUrl, `https://${bracket(reach)}:${v.port}`)] as const
      })
    const agents = agentResults.filter(Option.isSome).map((a) => a.value)
    yield* say(`admin certificate ${path.join(caDir, CA_FILES.clientCert)}, key ${path.join(caDir, CA_FILES.clientKey)}, CA ${path.join(caDir, CA_FILES.caCert)}`)
    yield* say(`TPMs are SIMULATED (in-memory) and so are the machines they measure: this is a demonstration setup`)
    yield* say(`simulated TPM manufacturer CA ${ekCaFile} (for an EK trust store: tpm_cert_store, ek_ca_dir)`)

    // enrolment through the tenant's own code, with the generated admin certificate
    const settings = yield* settingsFrom(upTenantSection(o, dataDir, { verifier: verifier.port, registrar: registrar.https.port }), {
      verifier: Option.none(),
      registrar: Option.none()
    })
    const tenant = yield* connect(settings)
    if (o.dashboardPort !== -1) {
      // the dashboard reads verifier and registrar with the same admin identity as the tenant
      const ctx = yield* Layer.build(DashboardLive({
        verifierUrl: settings.verifierUrl,
        registrarUrl: settings.registrarUrl,
        tls: settings.tls,
        host: dashboardHost,
        ...(o.dashboardPort === undefined ? {} : { port: o.dashboardPort })
      }))
      yield* say(`dashboard  ${Context.get(ctx, DashboardUrl)}  (web, on this machine only)`)
    }
    const [enrolled, enrolledPush] = yield* Effect.all([enrol(tenant, agents, say), enrolPush(tenant, pushAgents, say)], { concurrency: "unbounded" })
    const pushReady = o.push > 0 ? ` and ${enrolledPush} of ${o.push} push agents` : ""
    yield* say(`ready: ${enrolled} of ${o.agents} agents enrolled at the verifier${pushReady} in ${((Date.now() - started) / 1000).toFixed(1)} s. Press Ctrl-C to stop.`)
    return yield* watchStatus(
      { connections: tenant, pull: agents, push: pushAgents },
      { tamper: o.tamper, started, interactive: o.logFormat === "pretty", say, region }
    )
  }).pipe(
    Effect.scoped,
    Effect.ensuring(say("attest up: stopped"))
  )).pipe(
    Effect.provide(Tracing.layer({ endpoint: o.otlpEndpoint, serviceName: "attest-up", serviceVersion: version })),
    // the summary lines above are the interface; component logs only for warnings (a revocation
    // notice, a refused admin or activation: each naming its agent_id) and errors
    Effect.provide(Logging.layer({ log_format: o.logFormat, log_level: o.verbose ? "info" : "warning" }))
  )
}

/** The command's handler: `up` with its failure printed as one line. */
export const run = (o: UpOptions) => up(o).pipe(Effect.tapError((e) => Console.error(`attest up: ${"message" in e ? e.message : String(e)}`)))
