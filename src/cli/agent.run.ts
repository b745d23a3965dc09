/** How `attest agent` runs: the `[agent]` section to AgentOptions, the TPM and measurement layers, the agent. */
import { NodeContext, NodeHttpClient } from "@effect/platform-node"
import { Console, Effect, Layer, Option } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { layer as agentLayer, type AgentOptions, RunningAgent } from "../agent/Agent.js"
import { layer as simulatedMachine } from "../agent/measurements/SimulatedMachine.js"
import { layer as systemMeasurements } from "../agent/measurements/SystemMeasurements.js"
import { AgentConfig, ConfigSources } from "../config/services.js"
import type { AgentOptions as AgentSection } from "../config/sections.js"
import type { HashAlg, KeyAlg, SignScheme } from "../tpm/Tpm.js"
import { Tpm2Tools } from "../tpm/tpm2tools/Tpm2Tools.js"
import { TpmSimulator } from "../tpm/simulator/TpmSimulator.js"
import { Logging } from "../ops/Logging.js"
import { Tracing } from "../ops/Tracing.js"
import { version } from "../ops/version.js"

const readPem = (file: string) =>
  Effect.try({ try: () => fs.readFileSync(file, "utf8"), catch: (e) => new Error(`cannot read ${file}: ${(e as Error).message}`) })

/** `[agent]` options → AgentOptions (files read, `default` resolved as Keylime does). */
export const agentOptionsFromSection = (c: AgentSection) =>
  Effect.gen(function*() {
    const dataDir = path.resolve(c.data_dir)
    const caFiles = c.trusted_client_ca.map((f) => (f === "default" ? path.join(c.ca_dir, "cacert.crt") : f))
    const trustedClientCa = (yield* Effect.forEach(caFiles, readPem)).join("\n")
    const serverTls = c.server_cert === "default" || c.server_key === "default"
      ? undefined
      : { cert: yield* readPem(c.server_cert), key: yield* readPem(c.server_key) }
    const keyAlg = c.tpm_encryption_alg as KeyAlg
    const options: AgentOptions = {
      agentId: c.uuid,
      dataDir,
      host: c.ip,
      port: c.port,
      contactIp: c.contact_ip,
      contactPort: c.contact_port,
      registrarUrl: `http://${c.registrar_ip.includes(":") ? `[${c.registrar_ip}]` : c.registrar_ip}:${c.registrar_port}`,
      trustedClientCa,
      ...(serverTls ? { serverTls } : {}),
      payload: { dir: path.join(dataDir, "secure"), extractZip: true, script: c.payload_script === "" ? undefined : c.payload_script },
      revocationCertFile: path.join(dataDir, "secure", "unzipped", "RevocationNotifier-cert.crt"),
      ekAlg: keyAlg,
      ak: {
        alg: keyAlg,
        hash: c.tpm_hash_alg as HashAlg,
        scheme: (keyAlg === "ecc" ? "ecdsa" : c.tpm_signing_alg === "rsapss" ? "rsapss" : "rsassa") as SignScheme
      }
    }
    return options
  })

/** What is simulated, said once at start; nothing when the TPM and the measurements are this host's. */
export const simulationWarnings = (tpm: "tpm2-tools" | "simulator", measurements: "system" | "simulated"): ReadonlyArray<string> =>
  tpm === "simulator"
    ? [
      "*** The TPM is SIMULATED (in-memory, attest's simulator)" +
      (measurements === "simulated" ? " and the measurements come from a simulated machine" : "") +
      ": quotes prove nothing about this host. For a real TPM use --tpm tpm2-tools. ***"
    ]
    : measurements === "simulated"
    ? [
      "*** The measurements (IMA list, boot log) come from a SIMULATED machine extended into the TPM, " +
      "not from this host's kernel and firmware: quotes are real, the measured system is not. ***"
    ]
    : []

export interface AgentArgs {
  readonly config: Option.Option<string>
  readonly tpm: "tpm2-tools" | "simulator"
  readonly tcti: Option.Option<string>
  readonly measurements: Option.Option<"system" | "simulated">
}

/**
 * What both agents run on, from their arguments: the data directory made, the TPM layer (tpm2-tools
 * or the simulator, stored in the data directory) and the measurement source (securityfs or a
 * simulated machine), with the loud warnings for anything simulated.
 */
export const agentEnvironment = (
  args: Pick<AgentArgs, "tpm" | "tcti" | "measurements">,
  section: Pick<AgentSection, "ima_ml_path" | "measuredboot_ml_path">,
  options: { readonly dataDir: string; readonly agentId: string }
) =>
  Effect.gen(function*() {
    yield* Effect.try({
      try: () => fs.mkdirSync(options.dataDir, { recursive: true, mode: 0o700 }),
      catch: (e) => new Error(`cannot create the data directory ${options.dataDir}: ${(e as Error).message}`)
    })
    const measured = Option.getOrElse(args.measurements, () => (args.tpm === "simulator" ? "simulated" : "system"))
    for (const warning of simulationWarnings(args.tpm, measured)) yield* Effect.logWarning(warning)
    const tpmLayer = args.tpm === "simulator"
      ? TpmSimulator.layer({ stateFile: path.join(options.dataDir, "simulated-tpm.json") })
      : Tpm2Tools.layer(Option.match(args.tcti, { onNone: () => ({}), onSome: (t) => ({ tcti: t }) })).pipe(Layer.provide(NodeContext.layer))
    const sourceLayer = measured === "simulated"
      ? simulatedMachine({ name: options.agentId })
      : systemMeasurements({ imaPath: section.ima_ml_path, bootLogPath: section.measuredboot_ml_path })
    return { tpmLayer, sourceLayer }
  })

export const run = ({ config, measurements, tcti, tpm }: AgentArgs) =>
  Effect.gen(function*() {
    const section = yield* AgentConfig.pipe(Effect.provide(AgentConfig.layer), Effect.provide(ConfigSources.fromFile(config)))
    const say = Logging.say(section.log_format)
    yield* Effect.gen(function*() {
      const options = yield* agentOptionsFromSection(section)
      const { sourceLayer, tpmLayer } = yield* agentEnvironment({ tpm, tcti, measurements }, section, options)
      const running = agentLayer(options).pipe(
        Layer.provide(sourceLayer),
        Layer.provide(tpmLayer),
        Layer.provide(NodeHttpClient.layerUndici)
      )
      yield* Effect.gen(function*() {
        const agent = yield* RunningAgent
        yield* say(`attest agent ${agent.agentId} serving on ${agent.url}`)
        return yield* Effect.never
      }).pipe(
        Effect.provide(running),
        // the registration requests carry the trace context (traceparent) to the registrar
        Effect.provide(Tracing.fromSection(section, "attest-agent", version))
      )
    }).pipe(Effect.provide(Logging.fromSection(section)))
  }).pipe(Effect.tapError((e) => Console.error(`attest agent: ${"message" in e ? e.message : String(e)}`)))
