/**
 * A server's TLS and its administrators, from a config section: the one place where the registrar,
 * the verifier (and `attest up`) get their server key and certificate, the trusted client CAs, the
 * live admin CRL and the admin identity check. The checks themselves are pure and live in src/pki
 * (isAdminCertificate, trustStoreFromPem, liveRevocations); this file wires them.
 *
 *   - `ServerTls.fromSection(component, section)`: tls_dir generate|default|path, server_key,
 *     server_cert, trusted_client_ca, trusted_client_crl (verified at start, a bad one stops
 *     start-up), crl_refresh_interval (the CRL is re-read on change and at that interval).
 *   - `ServerTls.fromPem({ key, cert, clientCa, revocations? })`: PEM in memory (tests).
 *   - `AdminIdentityLive`: `ClientIdentity` whose admin is a client certificate that chains to the
 *     trusted client CAs, is valid now (Clock), has the Client Authentication EKU and is not in the
 *     CRL in force. Revoked certificates are logged as warnings.
 *   - `ServerTlsWithAdmins(component, section)`: both, what an HTTPS server with admin mTLS needs.
 *
 * The verifier (src/verifier/Server.ts, fromConfig.ts) is its API on src/http/HttpServers.ts with one
 * `tls: true` listener, provided with `ServerTlsWithAdmins("verifier", section)`.
 */
import { Clock, Context, Duration, Effect, Either, Layer, Option, Schema } from "effect"
import { ClientIdentity } from "./identity.js"
import { isAdminCertificate } from "../pki/admin.js"
import { type TrustStore, trustStoreFromPem } from "../pki/chain.js"
import { liveRevocations, type RevocationSource, staticRevocations } from "../pki/liveRevocations.js"
import { resolveServerTls, serverTlsOptionsOf } from "../pki/tlsDir.js"

/** The options of a `[registrar]` or `[verifier]` section this layer reads (snake_case as in the file). */
export interface ServerTlsSection {
  readonly tls_dir: string
  readonly server_key: string
  readonly server_cert: string
  readonly trusted_client_ca: ReadonlyArray<string>
  readonly trusted_client_crl: string
  readonly crl_refresh_interval: number
  readonly ca_dir: string
  /** The listen address, also put in a generated server certificate. */
  readonly ip: string
}

/** TLS material that cannot be used; the message names the component, the option and the file. */
export class TlsStartError extends Schema.TaggedError<TlsStartError>()("TlsStartError", {
  component: Schema.String,
  message: Schema.String
}) {}

export interface ServerTlsShape {
  /** PEM of the server's key and certificate. */
  readonly key: string
  readonly cert: string
  /** PEM of the trusted client CAs (a bundle): asked of clients in the handshake. */
  readonly clientCa: string
  readonly trustedClientCas: TrustStore
  /** The admin CRL in force, read per request. */
  readonly revocations: RevocationSource
}

export class ServerTls extends Context.Tag("attest/ServerTls")<ServerTls, ServerTlsShape>() {
  /** From a config section; the CRL watch lives as long as the layer. */
  static fromSection(component: string, section: ServerTlsSection): Layer.Layer<ServerTls, TlsStartError> {
    return Layer.scoped(ServerTls, serverTlsOfSection(component, section))
  }

  /** From PEM texts (tests); without `revocations` no CRL is checked. */
  static fromPem(o: {
    readonly key: string
    readonly cert: string
    readonly clientCa: string
    readonly revocations?: RevocationSource
  }): Layer.Layer<ServerTls, TlsStartError> {
    return Layer.effect(
      ServerTls,
      Either.match(trustStoreFromPem(o.clientCa), {
        onLeft: (message) => Effect.fail(new TlsStartError({ component: "server", message })),
        onRight: (trustedClientCas) =>
          Effect.succeed({ key: o.key, cert: o.cert, clientCa: o.clientCa, trustedClientCas, revocations: o.revocations ?? staticRevocations(undefined) })
      })
    )
  }
}

const serverTlsOfSection = (component: string, c: ServerTlsSection) =>
  Effect.gen(function*() {
    const fail = (message: string) => new TlsStartError({ component, message: `${component}: ${message}` })
    const tls = yield* resolveServerTls(serverTlsOptionsOf(c)).pipe(
      Effect.mapError((e) => fail(`TLS (tls_dir ${c.tls_dir}): ${e.message}`))
    )
    const clientCa = tls.ca.join("\n")
    const trusted = trustStoreFromPem(clientCa, `trusted_client_ca (${tls.files.ca.join(", ")})`)
    if (Either.isLeft(trusted)) return yield* fail(trusted.left)
    const file = tls.crlFile ?? tls.crl?.file ?? ""
    const revocations = yield* liveRevocations({
      file,
      trusted: trusted.right,
      ...(tls.crl === undefined ? {} : { initial: tls.crl.bytes }),
      refreshInterval: Duration.seconds(c.crl_refresh_interval)
    }).pipe(Effect.mapError((e) => fail(`trusted_client_crl ${e.message}`)))
    const list = yield* revocations.current
    if (list === undefined) {
      yield* Effect.logWarning(`${component}: no trusted_client_crl yet (${file}): admin client certificates are not checked for revocation until it exists`)
    } else {
      let n = 0
      for (const s of list.byIssuer.values()) n += s.size
      yield* Effect.logInfo(`${component}: admin certificate revocation list ${list.source}: ${n} revoked serial(s), re-read on change and every ${c.crl_refresh_interval} s`)
    }
    return { key: tls.key, cert: tls.cert, clientCa, trustedClientCas: trusted.right, revocations } satisfies ServerTlsShape
  })

/**
 * Admin check per request: isAdminCertificate against the trusted client CAs and the CRL in force,
 * at Clock time. A revoked certificate is logged as a warning (someone holds a withdrawn admin key).
 * A granted verdict is kept per peer certificate object (one per connection: identity.ts
 * peerCertificate) while the CRL in force is the same list and the time is within the chain's
 * validity: the chain walk and signature check cost an admin request more than its own work.
 */
export const adminCheck = (trusted: TrustStore, source?: RevocationSource) => {
  const granted = new WeakMap<object, { readonly revocations: unknown; readonly identity: string; readonly from: number; readonly until: number }>()
  return (peer: { readonly der: Uint8Array }) =>
    Effect.gen(function*() {
      const nowMs = yield* Clock.currentTimeMillis
      const revocations = source === undefined ? undefined : yield* source.current
      const kept = granted.get(peer)
      if (kept !== undefined && kept.revocations === revocations && nowMs >= kept.from && nowMs <= kept.until) return Option.some(kept.identity)
      const admin = isAdminCertificate(peer.der, trusted, new Date(nowMs), revocations)
      if (Either.isLeft(admin) && admin.left.reason === "revoked") {
        yield* Effect.logWarning("refused a revoked admin client certificate").pipe(
          Effect.annotateLogs({ reason: "revoked", serial: admin.left.serial ?? "", subject: admin.left.subject ?? "", crl: revocations?.source ?? "" })
        )
        return Option.none<string>()
      }
      if (Either.isLeft(admin)) {
        granted.delete(peer)
        yield* Effect.logDebug(`client certificate is not an admin certificate: ${admin.left.message}`)
        return Option.none<string>()
      }
      const { identity, validFrom, validUntil } = admin.right
      granted.set(peer, { revocations, identity, from: validFrom.getTime(), until: validUntil.getTime() })
      return Option.some(identity)
    })
}

/** `ClientIdentity` with the admins of the ServerTls in context (no bearer tokens). */
export const AdminIdentityLive: Layer.Layer<ClientIdentity, never, ServerTls> = Layer.effect(
  ClientIdentity,
  Effect.map(ServerTls, (tls) => ClientIdentity.make({ isAdmin: adminCheck(tls.trustedClientCas, tls.revocations) }))
)

/** ServerTls from a section, and the admin identity it defines. */
export const ServerTlsWithAdmins = (component: string, section: ServerTlsSection): Layer.Layer<ServerTls | ClientIdentity, TlsStartError> =>
  AdminIdentityLive.pipe(Layer.provideMerge(ServerTls.fromSection(component, section)))
