/** How `attest verifier` runs: start the verifier from `[verifier]` and say where it listens. */
import { Cause, Chunk, Console, Effect, Layer, Option } from "effect"
import { BoundListeners } from "../http/HttpServers.js"
import { Logging } from "../ops/Logging.js"
import { MetricsEndpoint } from "../http/MetricsListener.js"
import { Tracing } from "../ops/Tracing.js"
import { ConfigSources, VerifierConfig } from "../config/services.js"
import { pollerFromConfig, VerifierFromConfig } from "../verifier/fromConfig.js"
import { version } from "../ops/version.js"
import { reasonsOf } from "../ops/errorText.js"

export const run = ({ config }: { readonly config: Option.Option<string> }) =>
  Effect.gen(function*() {
    const section = yield* VerifierConfig.pipe(Effect.provide(VerifierConfig.layer), Effect.provide(ConfigSources.fromFile(config)))
    const say = Logging.say(section.log_format)
    yield* Layer.launch(
      Layer.effectDiscard(Effect.gen(function*() {
        const bound = yield* BoundListeners
        for (const l of bound.values()) yield* say(`attest verifier: API (HTTPS, mTLS admin) on ${l.url}`)
        const metrics = yield* MetricsEndpoint
        if (Option.isSome(metrics)) yield* say(`attest verifier: metrics (Prometheus) on ${metrics.value}/metrics`)
        yield* say(`attest verifier: ${section.mode} mode, verifier_id ${section.verifier_id}`)
      })).pipe(Layer.provideMerge(VerifierFromConfig(section, pollerFromConfig(section))))
    ).pipe(
      Effect.provide(Tracing.fromSection(section, "attest-verifier", version)),
      Effect.provide(Logging.fromSection(section))
    )
  }).pipe(
    Effect.tapError((e) => Console.error(`attest verifier: ${"message" in e ? e.message : String(e)}`)),
    // a defect (runMain reports nothing: disableErrorReporting) is said too, never a silent exit 1
    Effect.tapDefect((cause) =>
      Console.error(`attest verifier: stopped by a defect: ${Chunk.toReadonlyArray(Cause.defects(cause)).map(reasonsOf).join("; ")}\n${Cause.pretty(cause)}`)
    )
  )
