/**
 * How the domain tells the pull loop what an admin did. The poller implements it (one fiber per
 * agent in a FiberMap); the domain calls it after the database says what happened, so a loop that
 * runs in another process learns the same from the row (`generation`, `operational_state`).
 */
import { Context, Effect, Layer } from "effect"

export interface PollerControlShape {
  /** Start (or restart) the loop of an agent of this verifier; it reads the agent's row. */
  readonly start: (agentId: string) => Effect.Effect<void>
  /** Cancel the agent's loop at once, if this process runs it. */
  readonly stop: (agentId: string) => Effect.Effect<void>
  /** Whether this process runs the agent's loop (DELETE removes the row at once only then). */
  readonly isOwned: (agentId: string) => Effect.Effect<boolean>
}

export class PollerControl extends Context.Tag("attest/verifier/PollerControl")<PollerControl, PollerControlShape>() {
  /** No loop in this process (push mode, tools, the domain on its own): nothing is started or owned. */
  static readonly none: Layer.Layer<PollerControl> = Layer.succeed(PollerControl, {
    start: () => Effect.void,
    stop: () => Effect.void,
    isOwned: () => Effect.succeed(false)
  })
}
