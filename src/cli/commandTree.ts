/**
 * The `attest` command tree as plain data: each command's name, description, options (names, the
 * value they take, description, optional, repeatable, default) and positional arguments, and its
 * subcommands. Read from @effect/cli's command descriptors (their internal shape, pinned with the
 * exact version in package.json; test/cli/help.test.ts walks the whole tree), so the help text
 * (help.ts) and the argument order (argv.ts) come from the same declarations the parser uses.
 * Cheap: no implementation code is loaded.
 */
import { type Command, HelpDoc } from "@effect/cli"

export interface OptionInfo {
  /** `--rootfs`, then aliases (`-e`). */
  readonly names: ReadonlyArray<string>
  /** What follows the option (`directory`, `file`, `sha1 | sha256`), null for a flag. */
  readonly value: string | null
  readonly description: string
  readonly optional: boolean
  readonly repeated: boolean
  /** The default shown (`sha256`), when there is one worth showing. */
  readonly defaultValue: string | null
}

export interface CommandInfo {
  readonly name: string
  /** From the root: ["attest", "policy", "create", "runtime"]. */
  readonly path: ReadonlyArray<string>
  readonly description: string
  readonly options: ReadonlyArray<OptionInfo>
  /** Positional arguments in order, e.g. `<token|->`, `[<file>...]`. */
  readonly args: ReadonlyArray<string>
  readonly children: ReadonlyArray<CommandInfo>
}

type Node = { readonly _tag: string; readonly [key: string]: any }

const ANSI = /\x1b\[[0-9;]*m/g

/** A HelpDoc as one paragraph of plain text. */
const textOf = (doc: unknown): string =>
  doc === undefined ? "" : HelpDoc.toAnsiText(doc as HelpDoc.HelpDoc).replace(ANSI, "").replace(/\s+/g, " ").trim()

const valueOf = (single: Node): string | null => {
  const p = single["primitiveType"] as Node
  switch (p._tag) {
    case "Bool":
      return null
    case "Choice":
      return (p["alternatives"] as ReadonlyArray<readonly [string, unknown]>).map(([name]) => name).join(" | ")
    case "Path":
      return p["pathType"] === "either" ? "path" : String(p["pathType"])
    default:
      return single["pseudoName"]?._tag === "Some" ? String(single["pseudoName"].value) : String(single["placeholder"] ?? "value")
  }
}

const shownDefault = (fallback: unknown): string | null => {
  if (fallback === undefined || fallback === false || fallback === null) return null
  if (typeof fallback === "object" && (fallback as { _tag?: unknown })._tag === "None") return null
  if (typeof fallback === "string" || typeof fallback === "number") return String(fallback)
  return null
}

const optionsOf = (o: Node, optional = false, repeated = false, defaultValue: string | null = null): Array<OptionInfo> => {
  switch (o._tag) {
    case "Empty":
      return []
    case "Single":
      return [{
        names: [`--${o["name"]}`, ...(o["aliases"] as ReadonlyArray<string>).map((a) => (a.length === 1 ? `-${a}` : `--${a}`))],
        value: valueOf(o),
        description: textOf(o["description"]),
        optional: optional || valueOf(o) === null,
        repeated,
        defaultValue
      }]
    case "Map":
    case "WithFallback":
      return optionsOf(o["options"], optional, repeated, defaultValue)
    case "WithDefault":
      return optionsOf(o["options"], true, repeated, shownDefault(o["fallback"]))
    case "Variadic":
    case "KeyValueMap":
      return optionsOf(o["argumentOption"], true, true, defaultValue)
    case "Both":
      return [...optionsOf(o["left"], optional, repeated), ...optionsOf(o["right"], optional, repeated)]
    case "OrElse":
      return [...optionsOf(o["left"], true, repeated), ...optionsOf(o["right"], true, repeated)]
    default:
      return []
  }
}

const argsOf = (a: Node, optional = false, repeated = false): Array<string> => {
  switch (a._tag) {
    case "Empty":
      return []
    case "Single": {
      const name = a["pseudoName"]?._tag === "Some" ? String(a["pseudoName"].value) : String(a["name"] ?? "arg")
      const word = `<${name}>${repeated ? "..." : ""}`
      return [optional ? `[${word}]` : word]
    }
    case "Map":
    case "WithFallbackConfig":
      return argsOf(a["args"], optional, repeated)
    case "WithDefault":
      return argsOf(a["args"], true, repeated)
    case "Variadic":
      return argsOf(a["args"], optional || a["min"]?._tag !== "Some" || a["min"].value === 0, true)
    case "Both":
      return [...argsOf(a["left"], optional, repeated), ...argsOf(a["right"], optional, repeated)]
    default:
      return []
  }
}

const build = (d: Node, parentPath: ReadonlyArray<string>): CommandInfo => {
  switch (d._tag) {
    case "Map":
      return build(d["command"], parentPath)
    case "Subcommands": {
      const parent = build(d["parent"], parentPath)
      return { ...parent, children: (d["children"] as ReadonlyArray<Node>).map((c) => build(c, parent.path)) }
    }
    case "Standard":
    case "GetUserInput": {
      const path = [...parentPath, String(d["name"])]
      return {
        name: String(d["name"]),
        path,
        description: textOf(d["description"]),
        options: d._tag === "Standard" ? optionsOf(d["options"]) : [],
        args: d._tag === "Standard" ? argsOf(d["args"]) : [],
        children: []
      }
    }
    default:
      return { name: "?", path: parentPath, description: "", options: [], args: [], children: [] }
  }
}

/** The tree under a command (its descriptor is read once per call: only for --help and argument checks). */
export const commandTree = (command: Command.Command<any, any, any, any>): CommandInfo =>
  build((command as unknown as { readonly descriptor: Node }).descriptor, [])
