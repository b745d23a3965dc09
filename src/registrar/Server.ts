/**
 * The running registrar: two listeners like Keylime's (plain HTTP for agents' register/activate,
 * HTTPS with client certificates for admin list/show/delete), the domain service, identity from the
 * TLS peer certificate, and the authorization provider. Needs `SqlClient` with migrations applied.
 */
import { HttpApiBuilder } from "@effect/platform"
import { Clock, Effect, Either, Layer, Option } from "effect"
import * as crypto from "node:crypto"
import { AuthorizationProviderLive } from "../http/authorization.js"
import { ClientIdentity } from "../http/identity.js"
import { DEFAULT_MAX_BODY_BYTES, serveApi, type TlsFiles } from "../http/server.js"
import { V2_VERSIONS } from "../http/versions.js"
import { isAdminCertificate } from "../pki/admin.js"
import { type TrustStore, trustStoreOf } from "../pki/chain.js"
import type { RevocationSource } from "../pki/liveRevocations.js"
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
  /** Server key and certificate; `clientCa` = PEM of trusted_client_ca. */
  readonly tls: TlsFiles & { readonly clientCa: string }
  readonly ekTrustStore: TrustStore
  /** The CRL of trusted_client_ca in force (read per request); absent = revocation is not checked. */
  readonly clientRevocations?: RevocationSource
  readonly tpmIdentity: TpmIdentityPolicy
  readonly authorizationProvider?: string
  readonly maxBodyBytes?: number
}

/**
 * Admin check per request: pki's isAdminCertificate against trusted_client_ca and the CRL in force
 * (reloaded live, src/pki/liveRevocations.ts) at Clock time. A revoked certificate is logged as a warning (someone holds a withdrawn admin key).
 */
export const adminCheck = (trustedClientCa: TrustStore, source?: RevocationSource) => (peer: { readonly der: Uint8Array }) =>
  Effect.gen(function*() {
    const now = new Date(yield* Clock.currentTimeMillis)
    const revocations = source === undefined ? undefined : yield* source.current
    const admin = isAdminCertificate(peer.der, trustedClientCa, now, revocations)
    if (Either.isLeft(admin) && admin.left.reason === "revoked") {
      yield* Effect.logWarning("refused a revoked admin client certificate").pipe(
        Effect.annotateLogs({ reason: "revoked", serial: admin.left.serial ?? "", subject: admin.left.subject ?? "", crl: revocations?.source ?? "" })
      )
      return Option.none<string>()
    }
    if (Either.isLeft(admin)) {
      yield* Effect.logDebug(`client certificate is not an admin certificate: ${admin.left.message}`)
      return Option.none<string>()
    }
    return Option.some(admin.right.identity)
  })

/** Every CERTIFICATE block of PEM text as a trust store (trusted_client_ca may be a bundle). */
export const trustStoreFromPem = (pem: string, label = "trusted_client_ca"): Either.Either<TrustStore, string> => {
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? []
  if (blocks.length === 0) return Either.left(`${label} holds no PEM certificate`)
  return Either.map(
    Either.all(blocks.map((b) => Either.try({ try: () => new crypto.X509Certificate(b), catch: () => `${label}: unreadable certificate` }))),
    (certs) => trustStoreOf(certs, label)
  )
}

export const RegistrarServerLive = (options: RegistrarServerOptions) => {
  const clientCas = trustStoreFromPem(options.tls.clientCa)
  if (Either.isLeft(clientCas)) return Layer.fail(new Error(clientCas.left))
  const domain = Registrar.Default.pipe(
    Layer.provide(Layer.succeed(EkTrustStore, options.ekTrustStore)),
    Layer.provide(Layer.succeed(RegistrarSettings, { tpmIdentity: options.tpmIdentity }))
  )
  const api = HttpApiBuilder.api(RegistrarApi).pipe(
    Layer.provide(RegistrarHttpLive(V2_VERSIONS)),
    Layer.provide(domain),
    Layer.provide(ClientIdentity.layer({ isAdmin: adminCheck(clientCas.right, options.clientRevocations) })),
    Layer.provide(AuthorizationProviderLive(options.authorizationProvider ?? "simple"))
  )
  return serveApi({
    versions: V2_VERSIONS,
    unversioned: ["/version"],
    maxBodyBytes: options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES,
    listeners: [
      { name: "registrar-http", host: options.host, port: options.port },
      { name: "registrar-https", host: options.host, port: options.tlsPort, tls: options.tls }
    ]
  }).pipe(Layer.provide(api))
}
