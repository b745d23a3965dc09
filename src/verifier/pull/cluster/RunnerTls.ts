/**
 * Who may speak on a runner's port (cluster mode, issue 24): the runners' mutual TLS identity.
 *
 * Every runner presents its verifier's own HTTPS identity, `server_key` / `server_cert`, on both
 * ends of a runner-to-runner connection, and accepts a peer only when the peer's certificate
 * - chains to the verifier's `trusted_client_ca` (the CA it already trusts for its admins),
 * - is valid now and not revoked by the `trusted_client_crl` in force, and
 * - carries the Server Authentication extended key usage: a server certificate of that CA.
 * Admin client certificates (Client Authentication only) and agents' certificates are refused, so
 * an admin key cannot send the engine's Stop or Restart around the REST API's own checks. A server
 * certificate does not say which server it is: in Keylime's cv_ca layout the registrar's HTTPS
 * certificate is the verifier's (server-cert.crt), so a registrar sharing that CA could speak here
 * too (it is the same operator's service). Host names are not checked: every runner is a peer of
 * equal authority, reached at whatever address it registered.
 *
 * Cluster mode refuses to start when this runner's own server_cert would not pass its peers' check,
 * or its key does not go with it, naming the setting.
 */
import { Clock, Context, Effect, Either, Layer } from "effect"
import * as crypto from "node:crypto"
import * as tls from "node:tls"
import { ServerTls } from "../../../http/Tls.js"
import { EKU } from "../../../pki/certificate.js"
import { cnOf, hasExtendedKeyUsage, trustedPeerCertificate } from "../../../pki/admin.js"
import { ClusterModeRefused } from "./refused.js"

export interface RunnerTlsShape {
  /** PEM of this runner's key and certificate (the verifier's server_key and server_cert). */
  readonly key: string
  readonly cert: string
  /** PEM of the CAs a peer's certificate must chain to (trusted_client_ca). */
  readonly ca: string
  /** Why the certificate a peer presented (DER; undefined: none) is not a runner's, or undefined when it is. */
  readonly refusal: (peer: Uint8Array | undefined) => Effect.Effect<string | undefined>
}

export class RunnerTls extends Context.Tag("attest/verifier/pull/cluster/RunnerTls")<RunnerTls, RunnerTlsShape>() {
  /** From the verifier's ServerTls: its key and certificate, its trusted client CAs and their CRL. */
  static readonly fromServerTls: Layer.Layer<RunnerTls, ClusterModeRefused, ServerTls> = Layer.effect(
    RunnerTls,
    Effect.gen(function*() {
      const server = yield* ServerTls
      const refusal = (peer: Uint8Array | undefined) =>
        Effect.gen(function*() {
          const now = new Date(yield* Clock.currentTimeMillis)
          const revocations = yield* server.revocations.current
          return Either.match(trustedPeerCertificate(peer, server.trustedClientCas, now, revocations), {
            onLeft: (refused) => refused.message,
            onRight: (x) =>
              hasExtendedKeyUsage(x, EKU.serverAuth)
                ? undefined
                : `certificate ${cnOf(x)} is not a server certificate (no Server Authentication extended key usage): an admin's or an agent's certificate cannot speak on the runner port`
          })
        })
      const own = yield* Effect.try({
        try: () => {
          tls.createSecureContext({ key: server.key, cert: server.cert, ca: server.clientCa })
          return new Uint8Array(new crypto.X509Certificate(server.cert).raw)
        },
        catch: (e) =>
          new ClusterModeRefused({
            message: `[verifier] cluster = true: server_key and server_cert cannot be used for the runners' mutual TLS (${e instanceof Error ? e.message : String(e)})`
          })
      })
      const ownRefusal = yield* refusal(own)
      if (ownRefusal !== undefined) {
        return yield* new ClusterModeRefused({
          message:
            `[verifier] cluster = true: server_cert cannot authenticate this runner to the others, which accept only server certificates that chain to trusted_client_ca: ${ownRefusal}`
        })
      }
      return { key: server.key, cert: server.cert, ca: server.clientCa, refusal }
    })
  )
}
