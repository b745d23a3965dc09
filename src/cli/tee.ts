/** `attest tee …`: TEE evidence offline (AMD SEV-SNP reports). */
import { Command } from "@effect/cli"
import { verifySnpCommand } from "./tee/verifySnp.js"

export const teeCommand = Command.make("tee").pipe(
  Command.withDescription("TEE evidence: verify an AMD SEV-SNP attestation report offline, as verify/evidence does."),
  Command.withSubcommands([verifySnpCommand])
)
