import { Command } from "@effect/cli"
import { Console } from "effect"

// Placeholder until the engine behind it lands.
export const createRuntimeCommand = Command.make("runtime", {}, () => Console.error("attest policy: 'runtime' is not built yet")).pipe(
  Command.withDescription("Create a runtime (IMA) policy from a directory tree, an IMA list or a legacy allowlist.")
)
