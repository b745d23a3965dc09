/**
 * The `attest` command tree. Each subcommand is declared in its own file beside this one (name,
 * options, description) with cheap imports only, and its handler loads the implementation, a
 * `<name>.run.ts` module, when the command runs (`lazy`, see lazy.ts). Building this tree for
 * `--version`, `--help` or argument parsing therefore loads no TPM, PKI, HTTP or database code.
 *
 * Adding a subcommand is one line in the list below, e.g.
 *     (await import("./verifier.js")).verifierCommand,
 * where src/cli/verifier.ts declares
 *     export const verifierCommand = Command.make("verifier", { config: configFileOption },
 *       lazy(() => import("./verifier.run.js"), (m) => m.run)).pipe(Command.withDescription("…"))
 * and src/cli/verifier.run.ts exports `run` (taking the parsed options). A group (`attest tpm …`)
 * imports its subcommands' declarations in its own file (tpm.ts, policy.ts); each of those is split
 * the same way, a declaration with a lazy handler and a `.run.ts` implementation.
 * test/cli/bundle.test.ts fails when the start-up graph of the bundle reaches implementation code.
 */
import { Command } from "@effect/cli"
import { Console, Effect, FiberRef } from "effect"
import { prepareArgv } from "./argv.js"
import { commandTree } from "./commandTree.js"
import { UsageError } from "../config/usageError.js"
import { helpWidth, renderHelp } from "./help.js"
import { handlerRunning } from "./lazy.js"
import { version } from "../ops/version.js"

export const rootCommand = Command.make("attest").pipe(
  Command.withDescription(
    "Remote attestation for machines with a TPM 2.0: registrar, verifier, agent and tenant (Keylime wire-compatible)."
  ),
  Command.withSubcommands([
    (await import("./tpm.js")).tpmCommand,
    (await import("./policy.js")).policyCommand,
    (await import("./ca.js")).caCommand,
    (await import("./config.js")).configCommand,
    (await import("./agent.js")).agentCommand,
    (await import("./push-agent.js")).pushAgentCommand,
    (await import("./up.js")).upCommand,
    (await import("./registrar.js")).registrarCommand,
    (await import("./verifier.js")).verifierCommand,
    (await import("./tenant.js")).tenantCommand,
    (await import("./tee.js")).teeCommand,
    (await import("./ear.js")).earCommand,
    (await import("./dashboard.js")).dashboardCommand
  ])
)

const cli = Command.run(rootCommand, { name: "attest", version })

const ANSI = /\x1b\[[0-9;]*m/g

/** @effect/cli's words, said once each and in English: "'abc' is not a integer", "Path '/x' must exist" twice. */
const sentences = (text: string): string => {
  const said = text.replace(/ is not a integer/g, " is not an integer").replace(/Path '([^']*)' must exist/g, "'$1' does not exist")
  const parts = said.split(/(?<=exist|integer)\s+/)
  return [...new Set(parts)].join("; ")
}

/**
 * While @effect/cli parses (before a command's handler runs), what it prints about the command line
 * (a missing or malformed option, a file that does not exist, an unknown argument) becomes one line
 * `attest <command>: <what>`, without colours; exit 2 (exitCode.ts). The handler's own output is
 * left alone.
 */
const parseErrorsNamed = (path: ReadonlyArray<string>) => (console: Console.Console): Console.Console => ({
  ...console,
  error: (...args) =>
    Effect.flatMap(FiberRef.get(handlerRunning), (running) => {
      if (running) return console.error(...args)
      const text = sentences(args.map(String).join(" ").replace(ANSI, "").replace(/\s+/g, " ").trim())
      return text === "" ? Effect.void : console.error(`${path.join(" ")}: ${text} ('${path.join(" ")} --help' lists its options)`)
    })
})

/**
 * `attest` with a command line: `--help` anywhere prints that command's help (help.ts), a
 * misspelt subcommand names its group's commands (exit 2), and options may follow positional
 * arguments (argv.ts); then @effect/cli parses and runs the command.
 */
export const run = (argv: ReadonlyArray<string>) =>
  Effect.suspend(() => {
    const prepared = prepareArgv(commandTree(rootCommand), argv)
    switch (prepared._tag) {
      case "Help":
        return Console.log(renderHelp(prepared.command, helpWidth(), prepared.command.path.length === 1 ? version : undefined))
      case "Usage": {
        const message = `${prepared.path.join(" ")}: ${prepared.message}`
        return Effect.zipRight(Console.error(message), Effect.fail(new UsageError({ message })))
      }
      case "Run":
        return Effect.flatMap(Console.consoleWith(Effect.succeed), (console) =>
          cli(prepared.argv).pipe(Effect.withConsole(parseErrorsNamed(prepared.path)(console))))
    }
  })
