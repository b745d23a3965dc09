/** `attest registrar [--config file]`: the registrar on the options of the `[registrar]` section. */
import { Command } from "@effect/cli"
import { Console, Effect, Layer } from "effect"
import { ConfigSources, RegistrarConfig } from "../config/services.js"
import { BoundListeners } from "../../layers/HttpServers.js"
import { RegistrarFromConfig } from "../registrar/fromConfig.js"
import { configFileOption } from "./config.js"

export const registrarCommand = Command.make("registrar", { config: configFileOption }, ({ config }) =>
  Effect.gen(function*() {
    const section = yield* RegistrarConfig.pipe(Effect.provide(RegistrarConfig.layer), Effect.provide(ConfigSources.fromFile(config)))
    yield* Layer.launch(
      Layer.effectDiscard(Effect.gen(function*() {
        const bound = yield* BoundListeners
        for (const l of bound.values()) {
          yield* Console.log(`attest registrar: ${l.tls ? "admin (HTTPS, mTLS)" : "agents (HTTP)"} on ${l.url}`)
        }
      })).pipe(Layer.provideMerge(RegistrarFromConfig(section)))
    )
  }).pipe(Effect.tapError((e) => Console.error(`attest registrar: ${"message" in e ? e.message : String(e)}`)))
).pipe(
  Command.withDescription(
    "Run the registrar: agents register and activate on the HTTP port (8890), admins list, show and delete on the HTTPS port (8891)."
  )
)
