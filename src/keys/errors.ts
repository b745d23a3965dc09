/** Typed failures of the bootstrap-key functions; `message` is what a person (or the agent's HTTP reply) needs. */
import { Data } from "effect"

export class KeyError extends Data.TaggedError("KeyError")<{
  readonly reason: "length" | "decrypt" | "encrypt" | "encoding" | "auth_tag" | "key"
  readonly message: string
}> {}
