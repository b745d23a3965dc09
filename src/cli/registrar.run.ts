/** How `attest registrar` runs: start the registrar from `[registrar]` and say where it listens. */
import { Console, Effect, Layer, Option } from "effect"
import { ConfigSources, RegistrarConfig } from "../config/services.js"
import { BoundListeners } from "../http/HttpServers.js"
import { Logging } from "../ops/Logging.js"
import { MetricsEndpoint } from "../http/MetricsListener.js"
import { Tracing } from "../ops/Tracing.js"
import { RegistrarFromConfig } from "../registrar/fromConfig.js"
import { version } from "../ops/version.js"

export const run = ({ config }: { readonly config: Option.Option<string> }) =>
  Effect.gen(function*() {
    const section = yield* RegistrarConfig.pipe(Effect.provide(RegistrarConfig.layer), Effect.provide(ConfigSources.fromFile(config)))
    const say = Logging.say(section.log_format)
    yield* Layer.launch(
      Layer.effectDiscard(Effect.gen(function*() {
        const bound = yield* BoundListeners
        for (const l of bound.values()) {
          yield* say(`attest registrar: ${l.tls ? "admin (HTTPS, mTLS)" : "agents (HTTP)"} on ${l.url}`)
        }
        const metrics = yield* MetricsEndpoint
        if (Option.isSome(metrics)) yield* say(`attest registrar: metrics (Prometheus) on ${metrics.value}/metrics`)
      })).pipe(Layer.provideMerge(RegistrarFromConfig(section)))
    ).pipe(
      // for everything the process runs: the exporting tracer (if otlp_endpoint is set) and the logger
      Effect.provide(Tracing.fromSection(section, "attest-registrar", version)),
      Effect.provide(Logging.fromSection(section))
    )
  }).pipe(Effect.tapError((e) => Console.error(`attest registrar: ${"message" in e ? e.message : String(e)}`)))
