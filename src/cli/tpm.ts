/** `attest tpm …`: helpers for looking at quotes and TPMs by hand. */
import { Command } from "@effect/cli"
import { simulateCommand } from "./tpm/simulate.js"
import { simulatorCaCommand } from "./tpm/simulatorCa.js"
import { verifyQuoteCommand } from "./tpm/verifyQuote.js"

export const tpmCommand = Command.make("tpm").pipe(
  Command.withDescription("TPM helpers: verify a quote offline, show what a simulated TPM produces, or export the simulated TPMs' manufacturer CA."),
  Command.withSubcommands([verifyQuoteCommand, simulateCommand, simulatorCaCommand])
)
