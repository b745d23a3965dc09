/** `attest config show <component> [--config file]`: every effective option and where it came from. */
import { Args, Command, Options } from "@effect/cli"
import { Console, Effect } from "effect"
import { describeOrigin, renderValue, resolveSection } from "../config/load.js"
import type { OptionSpec } from "../config/option.js"
import { type SectionName, sectionNames, sections } from "../config/sections.js"
import { readSources } from "../config/services.js"

/** The shared `--config <file>` option of every component command. */
export const configFileOption = Options.file("config", { exists: "yes" }).pipe(
  Options.withDescription("TOML file with [verifier], [registrar], [tenant] and [agent] sections"),
  Options.optional
)

/** The section as TOML text, each line commented with its source and meaning. */
export const renderSection = Effect.fn("Config.render")(function*(component: SectionName, configFile: Parameters<typeof readSources>[0]) {
  const sources = yield* readSources(configFile)
  const r = yield* resolveSection(component, sources)
  const spec = sections[component] as Record<string, OptionSpec<unknown>>
  const lines = Object.keys(spec).map((name) => {
    const value = (r.values as Record<string, unknown>)[name]
    const origin = (r.origins as Record<string, Parameters<typeof describeOrigin>[0]>)[name]!
    return { text: `${name} = ${renderValue(spec[name]!, value)}`, note: `${describeOrigin(origin)}: ${spec[name]!.doc}` }
  })
  const width = Math.max(...lines.map((l) => l.text.length))
  return [`[${component}]`, ...lines.map((l) => `${l.text.padEnd(width)}  # ${l.note}`)].join("\n")
})

const showCommand = Command.make(
  "show",
  { component: Args.choice(sectionNames.map((n) => [n, n] as const), { name: "component" }), config: configFileOption },
  ({ component, config }) =>
    renderSection(component, config).pipe(
      Effect.flatMap(Console.log),
      Effect.tapError((e) => Console.error(`attest config: ${e.message}`))
    )
).pipe(Command.withDescription("Print the effective configuration of a component: each value and its source (default, file, env)."))

export const configCommand = Command.make("config").pipe(
  Command.withDescription("Inspect configuration: environment ATTEST_<SECTION>_<OPTION> over the --config TOML file over defaults."),
  Command.withSubcommands([showCommand])
)
