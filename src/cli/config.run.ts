/** How `attest config show` runs: the section as TOML text, each line commented with its source and meaning. */
import { Console, Effect, type Option } from "effect"
import { describeOrigin, renderValue, resolveSection } from "../config/load.js"
import type { OptionSpec } from "../config/option.js"
import { type SectionName, sections } from "../config/sections.js"
import { readSources } from "../config/services.js"

export const renderSection = Effect.fn("Config.render")(function*(component: SectionName, configFile: Option.Option<string>) {
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

export const show = ({ component, config }: { readonly component: SectionName; readonly config: Option.Option<string> }) =>
  renderSection(component, config).pipe(
    Effect.flatMap(Console.log),
    Effect.tapError((e) => Console.error(`attest config show: ${e.message}`))
  )
