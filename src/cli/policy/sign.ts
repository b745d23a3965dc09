import { Command } from "@effect/cli"
import { Console } from "effect"

// Placeholder until the engine behind it lands.
export const signCommand = Command.make("sign", {}, () => Console.error("attest policy: 'sign' is not built yet")).pipe(
  Command.withDescription("Sign a runtime policy (DSSE, ECDSA key).")
)
