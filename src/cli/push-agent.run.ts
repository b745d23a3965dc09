/** How `attest push-agent` runs: the `[agent]` section to PushAgentOptions, the TPM and measurement layers, the loop. */
import { NodeHttpClient } from "@effect/platform-node"
import { Console, Effect, Option } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { Logging } from "../ops/Logging.js"
import { AgentConfig, ConfigSources } from "../config/services.js"
import type { AgentOptions as AgentSection } from "../config/sections.js"
import { type PushAgentOptions, runPushAgent } from "../push-agent/PushAgent.js"
import type { HashAlg, KeyAlg, SignScheme } from "../tpm/Tpm.js"
import { agentEnvironment } from "./agent.run.js"

const readPem = (file: string) =>
  Effect.try({ try: () => fs.readFileSync(file, "utf8"), catch: (e) => new Error(`cannot read ${file}: ${(e as Error).message}`) })

/** `[agent]` options → PushAgentOptions (the verifier's CA read, `default` resolved in ca_dir). */
export const pushAgentOptionsFromSection = (c: AgentSection) =>
  Effect.gen(function*() {
    const keyAlg = c.tpm_encryption_alg as KeyAlg
    const caFile = c.verifier_tls_ca_cert === "default" ? path.join(c.ca_dir, "cacert.crt") : c.verifier_tls_ca_cert
    const options: PushAgentOptions = {
      agentId: c.uuid,
      dataDir: path.resolve(c.data_dir),
      registrarUrl: `http://${c.registrar_ip.includes(":") ? `[${c.registrar_ip}]` : c.registrar_ip}:${c.registrar_port}`,
      contactIp: c.contact_ip,
      contactPort: c.contact_port,
      verifierUrl: c.verifier_url,
      verifierCa: yield* readPem(caFile),
      attestationIntervalSeconds: c.attestation_interval_seconds,
      backoff: {
        initialMs: c.exponential_backoff_initial_delay,
        maxMs: c.exponential_backoff_max_delay,
        multiplier: c.exponential_backoff_multiplier,
        maxRetries: c.exponential_backoff_max_retries,
        jitter: c.exponential_backoff_jitter
      },
      ekAlg: keyAlg,
      ak: {
        alg: keyAlg,
        hash: c.tpm_hash_alg as HashAlg,
        scheme: (keyAlg === "ecc" ? "ecdsa" : c.tpm_signing_alg === "rsapss" ? "rsapss" : "rsassa") as SignScheme
      }
    }
    return options
  })

export interface PushAgentArgs {
  readonly config: Option.Option<string>
  readonly tpm: "tpm2-tools" | "simulator"
  readonly tcti: Option.Option<string>
  readonly measurements: Option.Option<"system" | "simulated">
}

export const run = ({ config, measurements, tcti, tpm }: PushAgentArgs) =>
  Effect.gen(function*() {
    const section = yield* AgentConfig.pipe(Effect.provide(AgentConfig.layer), Effect.provide(ConfigSources.fromFile(config)))
    const say = Logging.say(section.log_format)
    yield* Effect.gen(function*() {
      const options = yield* pushAgentOptionsFromSection(section)
      const { sourceLayer, tpmLayer } = yield* agentEnvironment({ tpm, tcti, measurements }, section, options)
      yield* say(`attest push-agent ${options.agentId}: pushing evidence to ${options.verifierUrl} (no listening port)`)
      yield* runPushAgent(options).pipe(
        Effect.provide(sourceLayer),
        Effect.provide(tpmLayer),
        Effect.provide(NodeHttpClient.layerUndici)
      )
    }).pipe(Effect.provide(Logging.fromSection(section)))
  }).pipe(Effect.tapError((e) => Console.error(`attest push-agent: ${"message" in e ? e.message : String(e)}`)))
