/**
 * Runs the `attest` command tree in-process (no child process: spawning tsx costs seconds on a
 * loaded machine) and captures what it prints through the Effect `Console`.
 */
import { NodeContext } from "@effect/platform-node"
import { Console, Effect, Exit } from "effect"
import { teardown } from "../../src/cli/exitCode.js"
import { run } from "../../src/cli/Root.js"

export interface CliResult {
  readonly ok: boolean
  /** The exit status bin.ts would give (exitCode.ts): 0, 1, or 2 for a usage error. */
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

export const runAttest = (...args: Array<string>): Effect.Effect<CliResult> =>
  Effect.gen(function*() {
    const out: Array<string> = []
    const err: Array<string> = []
    const console: Console.Console = {
      ...globalThis.console,
      [Console.TypeId]: Console.TypeId,
      unsafe: globalThis.console,
      log: (...a: ReadonlyArray<unknown>) => Effect.sync(() => void out.push(a.map(String).join(" "))),
      error: (...a: ReadonlyArray<unknown>) => Effect.sync(() => void err.push(a.map(String).join(" ")))
    } as unknown as Console.Console
    const exit = yield* run(["node", "attest", ...args]).pipe(
      Effect.provide(NodeContext.layer),
      Effect.withConsole(console),
      Effect.exit
    )
    let code = -1
    teardown(exit, (c) => void (code = c))
    return { ok: Exit.isSuccess(exit), code, stdout: out.join("\n") + (out.length ? "\n" : ""), stderr: err.join("\n") }
  })
