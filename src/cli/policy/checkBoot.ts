import { Command } from "@effect/cli"
import { Console } from "effect"

// Placeholder until the engine behind it lands.
export const checkBootCommand = Command.make("check-boot", {}, () => Console.error("attest policy: 'check-boot' is not built yet")).pipe(
  Command.withDescription("Evaluate a UEFI event log against a measured-boot reference state offline.")
)
