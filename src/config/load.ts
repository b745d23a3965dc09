/**
 * Effective configuration of one section: `ATTEST_<SECTION>_<OPTION>` environment variables over
 * the TOML file over the defaults of the option table. Pure over its sources, so tests pass
 * sources directly; unknown options and bad values fail with every problem named.
 */
import { Config, ConfigError, Either, Option, Schema } from "effect"
import { type OptionSpec, reasonOf, type SectionSpec, type SectionValues } from "./option.js"
import { type SectionName, sectionNames, sections } from "./sections.js"
import { isTable, lineOf, type TomlDocument, type TomlValue } from "./toml.js"

export interface ConfigSources {
  /** The process environment (or a test's). */
  readonly env: Readonly<Record<string, string | undefined>>
  /** The `--config` file; with its `text`, errors also give the line of a plainly written option. */
  readonly file?: { readonly path: string; readonly doc: TomlDocument; readonly text?: string }
}

export type Origin =
  | { readonly kind: "default" }
  | { readonly kind: "file"; readonly path: string }
  | { readonly kind: "env"; readonly variable: string }

export const ConfigProblem = Schema.Struct({
  section: Schema.String,
  option: Schema.String,
  reason: Schema.String
})
export type ConfigProblem = typeof ConfigProblem.Type

/** Start-up configuration error; the message lists each problem as `[section] option: reason`. */
export class ConfigLoadError extends Schema.TaggedError<ConfigLoadError>()("ConfigLoadError", {
  message: Schema.String,
  problems: Schema.Array(ConfigProblem)
}) {
  static of(problems: ReadonlyArray<ConfigProblem>): ConfigLoadError {
    // a file that cannot be read or parsed is named as itself, not as a section
    const lines = problems.map((p) => (p.section === "(file)" ? `${p.option}: ${p.reason}` : `[${p.section}] ${p.option}: ${p.reason}`))
    return new ConfigLoadError({ message: `invalid configuration:\n  ${lines.join("\n  ")}`, problems })
  }
}

export const envVariable = (section: string, option: string): string =>
  `ATTEST_${section.toUpperCase()}_${option.toUpperCase()}`

export interface ResolvedSection<S extends SectionSpec> {
  readonly section: string
  readonly values: SectionValues<S>
  readonly origins: { readonly [K in keyof S]: Origin }
}

/** Options set in the file or the environment that no table knows (typos must not pass silently). */
export const unknownOptions = (sources: ConfigSources): ReadonlyArray<ConfigProblem> => {
  const problems: Array<ConfigProblem> = []
  const known = sections as Record<string, SectionSpec>
  if (sources.file !== undefined) {
    const file = sources.file
    const where = (section: string, option: string) => {
      const line = file.text === undefined ? undefined : lineOf(file.text, section, option)
      return `in ${file.path}${line === undefined ? "" : ` line ${line}`}`
    }
    for (const [section, table] of Object.entries(file.doc)) {
      const spec = known[section]
      for (const [option, value] of Object.entries(table)) {
        if (section === "") {
          const tables = Array.isArray(value) && value.length > 0 && value.every(isTable)
          const reason = tables ? `[[${option}]] is an array of tables; a section is one table [${option}]` : "options must be inside a [section]"
          problems.push({ section: "(top level)", option, reason: `${reason} ${where(section, option)}` })
        } else if (spec === undefined) {
          problems.push({ section, option, reason: `unknown section [${section}] ${where(section, option)}; known: ${sectionNames.join(", ")}` })
        } else if (!Object.hasOwn(spec, option)) {
          const what = isTable(value) ? ` (a table: [${section}.${option}] or ${option}.<key> = …)` : ""
          problems.push({ section, option, reason: `unknown option${what} ${where(section, option)}` })
        }
      }
    }
  }
  for (const name of Object.keys(sources.env).sort()) {
    for (const section of sectionNames) {
      const prefix = `ATTEST_${section.toUpperCase()}_`
      if (!name.startsWith(prefix)) continue
      const option = name.slice(prefix.length).toLowerCase()
      if (!Object.hasOwn(sections[section], option)) {
        problems.push({ section, option, reason: `unknown option (environment variable ${name})` })
      }
    }
  }
  return problems
}

const decodeOption = (spec: OptionSpec<unknown>, raw: TomlValue) => Schema.decodeUnknownEither(spec.schema)(raw)

/** Resolves one section from explicit sources (pure). */
export const resolveSectionWith = <S extends SectionSpec>(
  section: string,
  spec: S,
  sources: ConfigSources
): Either.Either<ResolvedSection<S>, ConfigLoadError> => {
  const problems: Array<ConfigProblem> = [...unknownOptions(sources)]
  const values: Record<string, unknown> = {}
  const origins: Record<string, Origin> = {}
  const fileTable = sources.file?.doc[section]
  for (const [option, opt] of Object.entries(spec)) {
    const variable = envVariable(section, option)
    const envValue = sources.env[variable]
    let raw: TomlValue | undefined
    let origin: Origin = { kind: "default" }
    if (envValue !== undefined) {
      raw = envValue
      origin = { kind: "env", variable }
    } else if (fileTable !== undefined && Object.hasOwn(fileTable, option)) {
      raw = fileTable[option]!
      origin = { kind: "file", path: sources.file!.path }
    }
    origins[option] = origin
    if (raw === undefined) {
      values[option] = opt.default
      continue
    }
    const decoded = decodeOption(opt, raw)
    if (Either.isRight(decoded)) values[option] = decoded.right
    else {
      const line = sources.file?.text === undefined ? undefined : lineOf(sources.file.text, section, option)
      const from = origin.kind === "env"
        ? `environment variable ${origin.variable}`
        : `${sources.file?.path}${line === undefined ? "" : ` line ${line}`}`
      problems.push({ section, option, reason: `${reasonOf(decoded.left)} (from ${from})` })
    }
  }
  if (problems.length > 0) return Either.left(ConfigLoadError.of(problems))
  return Either.right({ section, values: values as SectionValues<S>, origins: origins as ResolvedSection<S>["origins"] })
}

export const resolveSection = <N extends SectionName>(name: N, sources: ConfigSources) =>
  resolveSectionWith(name, sections[name], sources)

/** Defaults of a section with some values replaced (tests provide configuration this way). */
export const sectionDefaults = <S extends SectionSpec>(spec: S, overrides: Partial<SectionValues<S>> = {}): SectionValues<S> => {
  const values: Record<string, unknown> = {}
  for (const [k, opt] of Object.entries(spec)) values[k] = opt.default
  return { ...values, ...overrides } as SectionValues<S>
}

/** A value as TOML text, for `attest config show` (passwords in URLs are masked). */
export const renderValue = (spec: OptionSpec<unknown>, value: unknown): string => {
  const raw = Either.getOrElse(Schema.encodeEither(spec.schema)(value), () => String(value))
  const render = (v: unknown): string =>
    Array.isArray(v)
      ? `[${v.map(render).join(", ")}]`
      : typeof v === "string"
      ? JSON.stringify(v.replace(/(\/\/[^:/@]+:)[^@]*@/, "$1***@"))
      : String(v)
  return render(raw)
}

export const describeOrigin = (o: Origin): string =>
  o.kind === "default" ? "default" : o.kind === "file" ? `file ${o.path}` : `env ${o.variable}`

/**
 * The same section as an Effect `Config`, read from the current `ConfigProvider` (every value a
 * string, as environment variables are; lists comma-separated or `["a", "b"]`) and decoded by the
 * same table. For code and tests that configure through a ConfigProvider, e.g.
 * `Effect.withConfigProvider(ConfigProvider.fromMap(new Map([["registrar.port", "0"]])))`.
 * Start-up uses `resolveSection`, which also knows each value's source and unknown options.
 */
export const sectionConfig = <N extends SectionName>(name: N): Config.Config<SectionValues<(typeof sections)[N]>> => {
  const spec = sections[name] as SectionSpec
  const fields = Object.fromEntries(Object.keys(spec).map((option) => [option, Config.option(Config.string(option))]))
  return Config.nested(Config.all(fields), name).pipe(
    Config.mapOrFail((raw) => {
      const values: Record<string, unknown> = {}
      for (const [option, opt] of Object.entries(spec)) {
        const given = raw[option] as Option.Option<string>
        if (Option.isNone(given)) {
          values[option] = opt.default
          continue
        }
        const decoded = decodeOption(opt, given.value)
        if (Either.isLeft(decoded)) return Either.left(ConfigError.InvalidData([name, option], reasonOf(decoded.left)))
        values[option] = decoded.right
      }
      return Either.right(values as SectionValues<(typeof sections)[N]>)
    })
  )
}
