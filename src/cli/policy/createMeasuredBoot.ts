import { Command } from "@effect/cli"
import { Console } from "effect"

// Placeholder until the engine behind it lands.
export const createMeasuredBootCommand = Command.make("measured-boot", {}, () => Console.error("attest policy: 'measured-boot' is not built yet")).pipe(
  Command.withDescription("Create a measured-boot reference state for the 'example' policy from a UEFI event log.")
)
