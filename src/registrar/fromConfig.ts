/**
 * The `[registrar]` section → a running registrar: TLS material as Keylime resolves it (tls_dir
 * generate/default/path, server_key, server_cert, trusted_client_ca), the EK trust store
 * directory, the database (SQLite under data_dir or database_url), the two listeners.
 * Unsupported values are start-up errors that name the option.
 */
import { Duration, Effect, Either, Layer, Schema } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import type { RegistrarOptions } from "../config/sections.js"
import { emptyTrustStore, loadTrustStore } from "../pki/chain.js"
import { CA_FILES } from "../pki/ca.js"
import { liveRevocations } from "../pki/liveRevocations.js"
import { resolveServerTls, type TlsMaterial } from "../pki/tlsDir.js"
import { trustStoreFromPem } from "./Server.js"
import { DbLive } from "../../layers/Sql.js"
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

/**
 * trusted_client_crl, verified against trusted_client_ca at start (a bad CRL stops start-up: fail
 * closed), then kept current for the life of the scope (file watch + crl_refresh_interval).
 */
const clientRevocationsOf = Effect.fn("Registrar.clientRevocations")(function*(tls: TlsMaterial, refreshSeconds: number, caDir: string) {
  const cas = trustStoreFromPem(tls.ca.join("\n"))
  if (Either.isLeft(cas)) return yield* new RegistrarStartError({ message: cas.left })
  const file = tls.crl?.file ?? defaultCrlFile(tls, caDir)
  const live = yield* liveRevocations({
    file,
    trusted: cas.right,
    ...(tls.crl === undefined ? {} : { initial: tls.crl.bytes }),
    refreshInterval: Duration.seconds(refreshSeconds)
  }).pipe(Effect.mapError((e) => new RegistrarStartError({ message: `registrar: trusted_client_crl ${e.message}` })))
  const list = yield* live.current
  if (list === undefined) {
    yield* Effect.logWarning(`no trusted_client_crl yet (${file}): admin client certificates are not checked for revocation until it exists`)
  } else {
    let n = 0
    for (const s of list.byIssuer.values()) n += s.size
    yield* Effect.logInfo(`admin certificate revocation list ${list.source}: ${n} revoked serial(s), re-read on change and every ${refreshSeconds} s`)
  }
  return live
})

/** Where the default CRL would be: next to the first trusted client CA file (the TLS directory). */
const defaultCrlFile = (tls: TlsMaterial, caDir: string): string =>
  path.join(tls.files.ca[0] === undefined ? caDir : path.dirname(tls.files.ca[0]), CA_FILES.crl)

export const registrarOptionsFromSection = Effect.fn("Registrar.optionsFromConfig")(function*(c: RegistrarOptions) {
  const policy = yield* tpmIdentity(c.tpm_identity)
  const tls = yield* resolveServerTls({
    tlsDir: c.tls_dir,
    serverKey: c.server_key,
    serverCert: c.server_cert,
    trustedClientCa: c.trusted_client_ca,
    trustedClientCrl: c.trusted_client_crl,
    caDir: c.ca_dir,
    serverNames: [c.ip]
  }).pipe(Effect.mapError((e) => new RegistrarStartError({ message: `registrar TLS (tls_dir ${c.tls_dir}): ${e.message}` })))
  const clientRevocations = yield* clientRevocationsOf(tls, c.crl_refresh_interval, c.ca_dir)
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
    tls: { key: tls.key, cert: tls.cert, clientCa: tls.ca.join("\n") },
    ekTrustStore,
    clientRevocations,
    tpmIdentity: policy,
    authorizationProvider: c.authorization_provider,
    maxBodyBytes: c.max_body_size
  }
  return options
})

/** The registrar with its database, from its config section (the CRL watch lives as long as the layer). */
export const RegistrarFromConfig = (c: RegistrarOptions) =>
  Layer.unwrapScoped(
    Effect.map(registrarOptionsFromSection(c), (options) =>
      RegistrarServerLive(options).pipe(Layer.provide(DbLive(c, "registrar"))))
  )
