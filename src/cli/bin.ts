#!/usr/bin/env node
/**
 * `attest`: `--version` and `--help` answered from the prebuilt command tree without loading
 * Effect (fast.ts); anything else runs the program (main.ts).
 */
import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import type { CommandInfo } from "./commandTree.js"
import { fastAnswer } from "./fast.js"
import { version } from "../ops/version.js"

/** dist/cli/commands.json beside the bundle; none when running from the sources. */
const prebuiltTree = (): CommandInfo | undefined => {
  try {
    return JSON.parse(readFileSync(fileURLToPath(new URL("./commands.json", import.meta.url)), "utf8")) as CommandInfo
  } catch {
    return undefined
  }
}

const tree = prebuiltTree()
const answer = tree === undefined ? undefined : fastAnswer(tree, process.argv, version)
if (answer === undefined) {
  await import("./main.js")
} else {
  if (answer.stdout !== undefined) process.stdout.write(answer.stdout)
  if (answer.stderr !== undefined) process.stderr.write(answer.stderr)
  process.exitCode = answer.code
}
