/**
 * Where the dashboard reads from and as whom: exactly the tenant's settings (`[tenant]` from the
 * environment and `--config`, `--verifier`/`--registrar` over its addresses, the admin client
 * certificate resolved from tls_dir), so an operator's tenant configuration serves both. The
 * browser never sees these credentials: the dashboard server uses them the way `kubectl proxy` uses
 * a kubeconfig.
 */
import { Data, Effect, type Option } from "effect"
import type { ClientTls } from "../http/client.js"
import { loadSettings } from "../tenant/settings.js"

export class DashboardError extends Data.TaggedError("DashboardError")<{ readonly message: string }> {}

export interface DashboardUpstreams {
  /** `https://host:port` of the verifier and the registrar's admin (HTTPS) port. */
  readonly verifierUrl: string
  readonly registrarUrl: string
  /** Admin client certificate and key, and the CAs trusted for both servers. */
  readonly tls: ClientTls
}

export interface UpstreamFlags {
  readonly verifier: Option.Option<string>
  readonly registrar: Option.Option<string>
}

/** Reads `[tenant]` from the environment and `--config`, then the flags and TLS files. */
export const loadUpstreams = (config: Option.Option<string>, flags: UpstreamFlags) =>
  loadSettings({ config, ...flags }).pipe(
    Effect.mapError((e) => new DashboardError({ message: e.message })),
    Effect.map((s): DashboardUpstreams => ({ verifierUrl: s.verifierUrl, registrarUrl: s.registrarUrl, tls: s.tls }))
  )
