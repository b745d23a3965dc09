/** How `attest dashboard` runs: `[tenant]` credentials and addresses, then the dashboard until interrupted. */
import { Console, Effect, Layer, Option } from "effect"
import { DashboardLive, DashboardUrl } from "../dashboard/Dashboard.js"
import { DashboardError, loadUpstreams } from "../dashboard/settings.js"

export interface DashboardArgs {
  readonly config: Option.Option<string>
  readonly port: Option.Option<number>
  readonly verifier: Option.Option<string>
  readonly registrar: Option.Option<string>
  readonly interval: number
}

export const run = (args: DashboardArgs) =>
  Effect.gen(function*() {
    if (args.interval < 1) return yield* new DashboardError({ message: "--interval must be at least 1 second" })
    if (Option.isSome(args.port) && (args.port.value < 0 || args.port.value > 65535)) {
      return yield* new DashboardError({ message: `--port ${args.port.value}: not a port (0-65535)` })
    }
    const upstreams = yield* loadUpstreams(args.config, { verifier: args.verifier, registrar: args.registrar })
    yield* Layer.launch(
      Layer.effectDiscard(Effect.gen(function*() {
        const url = yield* DashboardUrl
        yield* Console.log(`attest dashboard: ${url} (verifier ${upstreams.verifierUrl}, registrar ${upstreams.registrarUrl})`)
      })).pipe(
        Layer.provideMerge(DashboardLive({
          ...upstreams,
          intervalMs: args.interval * 1000,
          ...(Option.isSome(args.port) ? { port: args.port.value } : {})
        }))
      )
    )
  }).pipe(Effect.tapError((e) => Console.error(`attest dashboard: ${e.message}`)))
