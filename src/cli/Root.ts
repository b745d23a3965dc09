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
import { version } from "./version.js"

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

export const run = Command.run(rootCommand, { name: "attest", version })
