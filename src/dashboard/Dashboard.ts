/**
 * `DashboardLive(options)`: the dashboard as one layer — the sampler reading the verifier and the
 * registrar with the admin credentials, and the web server on 127.0.0.1 — providing `DashboardUrl`.
 * `attest dashboard` launches it; `attest up` can add it beside its servers:
 *
 *   DashboardLive({ verifierUrl, registrarUrl, tls: { cert, key, ca } })   // tls: the admin client identity
 *     → Effect.flatMap(DashboardUrl, (url) => say(`attest up: dashboard on ${url}`))
 */
import { Layer } from "effect"
import type { AssetsMissing } from "./assets.js"
import { SamplerLive, type SamplerOptions } from "./Sampler.js"
import { type DashboardListenError, type DashboardServerOptions, DashboardServerLive, DashboardUrl } from "./Server.js"

export interface DashboardOptions extends SamplerOptions, DashboardServerOptions {}

export const DashboardLive = (o: DashboardOptions): Layer.Layer<DashboardUrl, DashboardListenError | AssetsMissing> =>
  DashboardServerLive(o).pipe(Layer.provide(SamplerLive(o)))

export { DashboardUrl }
export { DEFAULT_DASHBOARD_PORT } from "./Server.js"
