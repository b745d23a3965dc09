/** How `attest registrar` runs: start the registrar from `[registrar]` and say where it listens. */
import { Console, Effect, Layer, type Option } from "effect"
import { ConfigSources, RegistrarConfig } from "../config/services.js"
import { BoundListeners } from "../../layers/HttpServers.js"
import { RegistrarFromConfig } from "../registrar/fromConfig.js"

export const run = ({ config }: { readonly config: Option.Option<string> }) =>
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
