/**
 * The `[registrar]` section → a running registrar: TLS and admins from src/http/Tls.ts (tls_dir
 * generate/default/path, server_key, server_cert, trusted_client_ca, trusted_client_crl with its
 * live reload), the EK trust store directory, the database (SQLite under data_dir or
 * database_url), the two listeners, and the metrics listener (metrics_ip, metrics_port; off at port
 * 0: src/http/MetricsListener.ts), all three cutting off slow clients (client_header_timeout,
 * client_request_timeout, keep_alive_timeout: src/http/timeouts.ts). Unsupported values are start-up errors that name the option.
 */
import { Effect, Layer, Schema } from "effect"
import * as fs from "node:fs"
import { MetricsServer } from "../http/MetricsListener.js"
import { DbLive } from "../db/Sql.js"
import { ServerTlsWithAdmins } from "../http/Tls.js"
import type { RegistrarOptions } from "../config/sections.js"
import { listenerTimeoutsLayer } from "../http/timeouts.js"
import { emptyTrustStore, loadTrustStore } from "../pki/chain.js"
import type { TpmIdentityPolicy } from "./registration.js"
import { RegistrarServerLive, type RegistrarServerOptions } from "./Server.js"

/** A registrar option that cannot be used; the message names it. */
export class RegistrarStartError extends Schema.TaggedError<RegistrarStartError>()("RegistrarStartError", {
  message: Schema.String
}) {}

const tpmIdentity = (value: string): Effect.Effect<TpmIdentityPolicy, RegistrarStartError> =>
  value === "default" || value === "ek_cert"
    ? Effect.succeed(value)
    : Effect.fail(
      new RegistrarStartError({ message: `tpm_identity = ${value} is not supported: attest's registrar checks EK identities only (default or ek_cert)` })
    )

/** The registrar's own options of the section (TLS and the database are layers of their own). */
export const registrarOptionsFromSection = Effect.fn("Registrar.optionsFromConfig")(function*(c: RegistrarOptions) {
  const policy = yield* tpmIdentity(c.tpm_identity)
  const ekTrustStore = fs.existsSync(c.ek_ca_dir)
    ? yield* loadTrustStore(c.ek_ca_dir).pipe(
      Effect.mapError((e) => new RegistrarStartError({ message: `ek_ca_dir ${c.ek_ca_dir}: ${e.message}` }))
    )
    : emptyTrustStore(c.ek_ca_dir)
  if (ekTrustStore.anchors.length === 0) {
    yield* Effect.logWarning(
      `ek_ca_dir ${c.ek_ca_dir} holds no TPM manufacturer CA certificate: every registration with an EK certificate will be refused`
    )
  }
  const options: RegistrarServerOptions = {
    host: c.ip,
    port: c.port,
    tlsPort: c.tls_port,
    ekTrustStore,
    tpmIdentity: policy,
    authorizationProvider: c.authorization_provider,
    maxBodyBytes: c.max_body_size
  }
  return options
})

/** The registrar with its TLS, admins, database and metrics listener, from its config section. */
export const RegistrarFromConfig = (c: RegistrarOptions) =>
  Layer.unwrapEffect(Effect.map(registrarOptionsFromSection(c), RegistrarServerLive)).pipe(
    Layer.provide(ServerTlsWithAdmins("registrar", c)),
    Layer.provide(DbLive(c, "registrar")),
    Layer.merge(MetricsServer.fromSection(c, "registrar-metrics", "registrar")),
    Layer.provide(listenerTimeoutsLayer(c))
  )
