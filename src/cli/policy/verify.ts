import { Command } from "@effect/cli"
import { Console } from "effect"

// Placeholder until the engine behind it lands.
export const verifyCommand = Command.make("verify", {}, () => Console.error("attest policy: 'verify' is not built yet")).pipe(
  Command.withDescription("Verify a DSSE-signed runtime policy.")
)
