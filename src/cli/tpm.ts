/** `attest tpm …`: helpers for looking at quotes and TPMs by hand. */
import { Command } from "@effect/cli"
import { Console } from "effect"

export const tpmCommand = Command.make("tpm", {}, () => Console.log("attest tpm: subcommands arrive with the TPM core")).pipe(
  Command.withDescription("TPM helpers: verify a quote offline, or show what a simulated TPM produces.")
)
