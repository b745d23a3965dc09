/**
 * What `attest` answers without loading Effect or any command: `--version`, `--help` of any
 * command, a group without its subcommand, and a misspelt subcommand, from the command tree the
 * bundle wrote at build time (dist/cli/commands.json, made by commandTreeDump.ts from the same
 * declarations; test/cli/bundle.test.ts compares them). Everything else, and every run from the
 * sources (no commands.json), goes to main.ts. The answers are those Root.ts gives (same argv.ts
 * and help.ts). Node only, no Effect: this is what keeps `--help` near a bare node start.
 */
import { prepareArgv } from "./argv.js"
import type { CommandInfo } from "./commandTree.js"
import { helpWidth, renderHelp } from "./help.js"

export interface FastAnswer {
  readonly stdout?: string
  readonly stderr?: string
  readonly code: number
}

export const fastAnswer = (tree: CommandInfo, argv: ReadonlyArray<string>, version: string): FastAnswer | undefined => {
  const tokens = argv.slice(2)
  if (tokens.length === 1 && tokens[0] === "--version") return { stdout: `${version}\n`, code: 0 }
  const prepared = prepareArgv(tree, argv)
  switch (prepared._tag) {
    case "Help":
      return { stdout: `${renderHelp(prepared.command, helpWidth(), prepared.command.path.length === 1 ? version : undefined)}\n`, code: 0 }
    case "Usage":
      return { stderr: `${prepared.path.join(" ")}: ${prepared.message}\n`, code: 2 }
    case "Run":
      return undefined
  }
}
