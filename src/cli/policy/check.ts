import { Command } from "@effect/cli"
import { Console } from "effect"

// Placeholder until the engine behind it lands.
export const checkCommand = Command.make("check", {}, () => Console.error("attest policy: 'check' is not built yet")).pipe(
  Command.withDescription("Evaluate an IMA measurement list against a runtime policy offline.")
)
