/**
 * What `attest dashboard` connects with: the `[tenant]` section (environment `ATTEST_TENANT_*` over
 * the `--config` file over defaults) — verifier and registrar addresses and the admin client
 * certificate, key and trusted server CAs (`tls_dir = default`: the CA directory's
 * client-cert.crt, client-private.pem, cacert.crt) — with `--verifier` / `--registrar` over the
 * addresses. The browser never sees these credentials: the dashboard server uses them the way
 * `kubectl proxy` uses a kubeconfig.
 */
import { Data, Effect, Option } from "effect"
import { ConfigSources, resolveFromSources } from "../config/services.js"
import type { TenantOptions } from "../config/sections.js"
import type { ClientTls } from "../http/client.js"
import { resolveClientTls } from "../pki/tlsDir.js"

export class DashboardError extends Data.TaggedError("DashboardError")<{ readonly message: string }> {}

export interface DashboardUpstreams {
  /** `https://host:port` of the verifier and the registrar's admin (HTTPS) port. */
  readonly verifierUrl: string
  readonly registrarUrl: string
  /** Admin client certificate and key, and the CAs trusted for both servers. */
  readonly tls: ClientTls
}

const host = (ip: string) => (ip.includes(":") ? `[${ip}]` : ip)

/** `https://host:port` from a flag (a bare `host:port` gets https://). */
export const normalizeUrl = (flag: string, what: string): Effect.Effect<string, DashboardError> => {
  const text = /^[a-z]+:\/\//i.test(flag) ? flag : `https://${flag}`
  try {
    const u = new URL(text)
    if (u.protocol !== "https:") {
      return Effect.fail(new DashboardError({ message: `--${what} ${flag}: the ${what} is reached over HTTPS only (https://host:port)` }))
    }
    return Effect.succeed(`${u.protocol}//${u.host}`)
  } catch {
    return Effect.fail(new DashboardError({ message: `--${what} ${flag}: not an address (https://host:port)` }))
  }
}

export interface UpstreamFlags {
  readonly verifier: Option.Option<string>
  readonly registrar: Option.Option<string>
}

/** Upstreams from `[tenant]` values already read (tests and `attest up` give them directly). */
export const upstreamsFrom = (options: TenantOptions, flags: UpstreamFlags) =>
  Effect.gen(function*() {
    const verifierUrl = Option.isSome(flags.verifier)
      ? yield* normalizeUrl(flags.verifier.value, "verifier")
      : `https://${host(options.verifier_ip)}:${options.verifier_port}`
    const registrarUrl = Option.isSome(flags.registrar)
      ? yield* normalizeUrl(flags.registrar.value, "registrar")
      : `https://${host(options.registrar_ip)}:${options.registrar_port}`
    const material = yield* resolveClientTls({
      tlsDir: options.tls_dir,
      clientKey: options.client_key,
      clientCert: options.client_cert,
      trustedServerCa: options.trusted_server_ca,
      caDir: options.ca_dir
    }).pipe(Effect.mapError((e) => new DashboardError({ message: `[tenant] TLS (tls_dir ${options.tls_dir}): ${e.message}` })))
    return {
      verifierUrl,
      registrarUrl,
      tls: { cert: material.cert, key: material.key, ca: material.ca.join("\n") }
    } satisfies DashboardUpstreams
  })

/** Reads `[tenant]` from the environment and `--config`, then the flags and TLS files. */
export const loadUpstreams = (config: Option.Option<string>, flags: UpstreamFlags) =>
  resolveFromSources("tenant").pipe(
    Effect.provide(ConfigSources.fromFile(config)),
    Effect.mapError((e) =>
      new DashboardError({ message: e.problems.map((p) => `[${p.section}] ${p.option}: ${p.reason}`).join("; ") || e.message })
    ),
    Effect.flatMap((r) => upstreamsFrom(r.values, flags))
  )
