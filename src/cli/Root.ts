/** The `attest` command: each subcommand lives in its own file beside this one. */
import { Command } from "@effect/cli"
import { agentCommand } from "./agent.js"
import { caCommand } from "./ca.js"
import { configCommand } from "./config.js"
import { policyCommand } from "./policy.js"
import { registrarCommand } from "./registrar.js"
import { teeCommand } from "./tee.js"
import { tpmCommand } from "./tpm.js"
import { upCommand } from "./up.js"
import { version } from "./version.js"

export const rootCommand = Command.make("attest").pipe(
  Command.withDescription(
    "Remote attestation for machines with a TPM 2.0: registrar, verifier, agent and tenant (Keylime wire-compatible)."
  ),
  Command.withSubcommands([tpmCommand, policyCommand, caCommand, configCommand, agentCommand, upCommand, registrarCommand, teeCommand])
)

export const run = Command.run(rootCommand, { name: "attest", version })
