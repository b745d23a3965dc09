/**
 * The command line before @effect/cli parses it: the subcommand path is walked through the command
 * tree, so `--help` anywhere gives that command's help (help.ts), a misspelt subcommand names its
 * group's subcommands, and the leaf's options are moved before its positional arguments, so
 * options may follow them (`attest ear verify - --jwks f`; @effect/cli reads options only before
 * the first positional argument). Which options take a value comes from the tree. Pure.
 */
import type { CommandInfo } from "./commandTree.js"
import { nearest } from "./help.js"

export type Prepared =
  | { readonly _tag: "Run"; readonly argv: ReadonlyArray<string>; readonly path: ReadonlyArray<string> }
  | { readonly _tag: "Help"; readonly command: CommandInfo }
  | { readonly _tag: "Usage"; readonly path: ReadonlyArray<string>; readonly message: string }

const HELP = new Set(["-h", "--help"])
/** @effect/cli's built-in options that take a value. */
const BUILT_IN_WITH_VALUE = new Set(["--log-level", "--completions"])

/** Options first (each with its value), then the positional arguments; after `--` everything is positional. */
export const optionsFirst = (leaf: CommandInfo, tokens: ReadonlyArray<string>): ReadonlyArray<string> => {
  const takesValue = new Set([...BUILT_IN_WITH_VALUE, ...leaf.options.filter((o) => o.value !== null).flatMap((o) => o.names)])
  const options: Array<string> = []
  const positional: Array<string> = []
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!
    if (t === "--") {
      positional.push(...tokens.slice(i))
      break
    }
    if (t.startsWith("-") && t !== "-") {
      options.push(t)
      if (!t.includes("=") && takesValue.has(t) && i + 1 < tokens.length) options.push(tokens[++i]!)
    } else {
      positional.push(t)
    }
  }
  return [...options, ...positional]
}

export const prepareArgv = (tree: CommandInfo, argv: ReadonlyArray<string>): Prepared => {
  const [runtime = "node", script = "attest", ...tokens] = argv
  let node = tree
  let i = 0
  while (node.children.length > 0 && i < tokens.length) {
    const t = tokens[i]!
    if (HELP.has(t)) return { _tag: "Help", command: node }
    // a group's own options (--version, --completions …) are @effect/cli's
    if (t.startsWith("-")) return { _tag: "Run", argv, path: node.path }
    const child = node.children.find((c) => c.name === t)
    if (child === undefined) {
      const names = node.children.map((c) => c.name)
      const near = nearest(t, names)
      return {
        _tag: "Usage",
        path: node.path,
        message: `unknown command '${t}'${near.length > 0 ? ` (did you mean ${near.join(" or ")}?)` : ""}; its commands: ${names.join(", ")}`
      }
    }
    node = child
    i++
  }
  // a group with options of its own runs itself (`attest verifier`, beside `attest verifier cluster …`)
  if (node.children.length > 0 && node.options.length === 0) return { _tag: "Help", command: node }
  const rest = tokens.slice(i)
  const dashDash = rest.indexOf("--")
  if ((dashDash === -1 ? rest : rest.slice(0, dashDash)).some((t) => HELP.has(t))) return { _tag: "Help", command: node }
  return { _tag: "Run", argv: [runtime, script, ...tokens.slice(0, i), ...optionsFirst(node, rest)], path: node.path }
}
