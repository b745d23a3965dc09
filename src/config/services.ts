/**
 * Configuration as services. `ConfigSources` (the environment and the optional `--config` TOML
 * file) is read once at the edge; each component's config is a `Context.Tag` decoded from it.
 *
 *   RegistrarConfig.layer.pipe(Layer.provide(ConfigSources.fromFile(Option.some("attest.toml"))))
 *   RegistrarConfig.test({ port: 0, database_url: "" })        // tests: defaults + overrides
 */
import * as fs from "node:fs"
import { Context, Effect, Either, Layer, Option } from "effect"
import { ConfigLoadError, type ConfigSources as Sources, resolveSection, type ResolvedSection, sectionDefaults } from "./load.js"
import {
  type AgentOptions,
  agentSection,
  type RegistrarOptions,
  registrarSection,
  type SectionName,
  sections,
  type TenantOptions,
  tenantSection,
  type VerifierOptions,
  verifierSection
} from "./sections.js"
import { parseToml } from "./toml.js"

export class ConfigSources extends Context.Tag("attest/config/ConfigSources")<ConfigSources, Sources>() {
  /**
   * The process environment plus the TOML file, when one is named. This is the one place that
   * reads `process.env`: unknown `ATTEST_*` variables can only be found by listing it.
   */
  static readonly fromFile = (configFile: Option.Option<string>): Layer.Layer<ConfigSources, ConfigLoadError> =>
    Layer.effect(ConfigSources, readSources(configFile))

  static readonly make = (sources: Sources): Layer.Layer<ConfigSources> => Layer.succeed(ConfigSources, sources)
}

export const readSources = (configFile: Option.Option<string>): Effect.Effect<Sources, ConfigLoadError> =>
  Effect.gen(function*() {
    const env = yield* Effect.sync(() => ({ ...process.env }))
    if (Option.isNone(configFile)) return { env }
    const path = configFile.value
    const text = yield* Effect.try({
      try: () => fs.readFileSync(path, "utf8"),
      catch: (cause) =>
        ConfigLoadError.of([{ section: "(file)", option: path, reason: `cannot read the config file: ${(cause as Error)?.message ?? cause}` }])
    })
    const doc = parseToml(text)
    if (Either.isLeft(doc)) {
      return yield* ConfigLoadError.of([{ section: "(file)", option: path, reason: `line ${doc.left.line}: ${doc.left.message}` }])
    }
    return { env, file: { path, doc: doc.right, text } }
  }).pipe(Effect.withSpan("config.readSources"))

/** Resolution with provenance, for `attest config show`. */
export const resolveFromSources = <N extends SectionName>(name: N) =>
  Effect.flatMap(ConfigSources, (sources) => resolveSection(name, sources)) as Effect.Effect<
    ResolvedSection<(typeof sections)[N]>,
    ConfigLoadError,
    ConfigSources
  >

const sectionLayer = <N extends SectionName, I, S>(tag: Context.Tag<I, S>, name: N): Layer.Layer<I, ConfigLoadError, ConfigSources> =>
  Layer.effect(tag, Effect.map(resolveFromSources(name), (r) => r.values as S))

export class VerifierConfig extends Context.Tag("attest/config/Verifier")<VerifierConfig, VerifierOptions>() {
  static readonly layer = sectionLayer(VerifierConfig, "verifier")
  static readonly test = (o: Partial<VerifierOptions> = {}) => Layer.succeed(VerifierConfig, sectionDefaults(verifierSection, o))
}

export class RegistrarConfig extends Context.Tag("attest/config/Registrar")<RegistrarConfig, RegistrarOptions>() {
  static readonly layer = sectionLayer(RegistrarConfig, "registrar")
  static readonly test = (o: Partial<RegistrarOptions> = {}) => Layer.succeed(RegistrarConfig, sectionDefaults(registrarSection, o))
}

export class TenantConfig extends Context.Tag("attest/config/Tenant")<TenantConfig, TenantOptions>() {
  static readonly layer = sectionLayer(TenantConfig, "tenant")
  static readonly test = (o: Partial<TenantOptions> = {}) => Layer.succeed(TenantConfig, sectionDefaults(tenantSection, o))
}

export class AgentConfig extends Context.Tag("attest/config/Agent")<AgentConfig, AgentOptions>() {
  static readonly layer = sectionLayer(AgentConfig, "agent")
  static readonly test = (o: Partial<AgentOptions> = {}) => Layer.succeed(AgentConfig, sectionDefaults(agentSection, o))
}
