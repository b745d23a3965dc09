/** `attest ear …`: attestation results as EAR (signed JWTs), checked offline. */
import { Command } from "@effect/cli"
import { verifyEarCommand } from "./ear/verify.js"

export const earCommand = Command.make("ear").pipe(
  Command.withDescription("Attestation results as EAR (draft-ietf-rats-ear): check a token the verifier signed."),
  Command.withSubcommands([verifyEarCommand])
)
