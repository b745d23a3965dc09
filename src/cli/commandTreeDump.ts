/** Prints the command tree as JSON (scripts/bundle.mjs writes it to dist/cli/commands.json for fast.ts). */
import { commandTree } from "./commandTree.js"
import { rootCommand } from "./Root.js"

process.stdout.write(JSON.stringify(commandTree(rootCommand)))
