/**
 * The running registrar: two listeners like Keylime's (plain HTTP for agents' register/activate,
 * HTTPS with client certificates for admin list/show/delete), the domain service and the
 * authorization provider, and `GET /openapi.json` (public, unversioned: openapi.ts). Needs, from outside: `ServerTls` and `ClientIdentity` (src/http/Tls.ts)
 * and `SqlClient` with migrations applied (src/db/Sql.ts); fromConfig.ts composes them from the
 * `[registrar]` section.
 */
import { HttpApiBuilder } from "@effect/platform"
import { Layer } from "effect"
import { HttpServers } from "../http/HttpServers.js"
import { AuthorizationProviderLive } from "../http/authorization.js"
import { V2_VERSIONS, versionInfo } from "../http/versions.js"
import { REGISTRAR_UNVERSIONED, registrarDocument } from "./openapi.js"
import { serveOpenApi } from "../http/openapi.js"
import type { TrustStore } from "../pki/chain.js"
import { RegistrarApi } from "./Api.js"
import { RegistrarHttpLive } from "./Http.js"
import { EkTrustStore, Registrar, RegistrarSettings } from "./Registrar.js"
import type { TpmIdentityPolicy } from "./registration.js"

export interface RegistrarServerOptions {
  readonly host: string
  /** Plain HTTP port for agents (Keylime `port`, 8890); 0 = any free port. */
  readonly port: number
  /** HTTPS port for admins (Keylime `tls_port`, 8891); 0 = any free port. */
  readonly tlsPort: number
  readonly ekTrustStore: TrustStore
  readonly tpmIdentity: TpmIdentityPolicy
  readonly authorizationProvider?: string
  readonly maxBodyBytes?: number
}

export const RegistrarServerLive = (options: RegistrarServerOptions) => {
  const domain = Registrar.Default.pipe(
    Layer.provide(Layer.succeed(EkTrustStore, options.ekTrustStore)),
    Layer.provide(Layer.succeed(RegistrarSettings, { tpmIdentity: options.tpmIdentity }))
  )
  const api = HttpApiBuilder.api(RegistrarApi).pipe(
    Layer.provide(RegistrarHttpLive(V2_VERSIONS)),
    Layer.provide(domain),
    Layer.provide(AuthorizationProviderLive(options.authorizationProvider ?? "simple"))
  )
  return HttpServers.layer({
    versions: V2_VERSIONS,
    unversioned: REGISTRAR_UNVERSIONED,
    ...(options.maxBodyBytes === undefined ? {} : { maxBodyBytes: options.maxBodyBytes }),
    listeners: [
      { name: "registrar-http", host: options.host, port: options.port, tls: false },
      { name: "registrar-https", host: options.host, port: options.tlsPort, tls: true }
    ],
    // GET /version without the router (http/fixedRoutes.ts)
    fixedRoutes: [{ path: "/version", action: "get_version", results: versionInfo(V2_VERSIONS) }]
  }).pipe(
    Layer.provide(api),
    Layer.provide(serveOpenApi(registrarDocument)),
    Layer.provide(AuthorizationProviderLive(options.authorizationProvider ?? "simple"))
  )
}
