/**
 * TLS material of a component from its config, as Keylime resolves it:
 * - `tls_dir = generate`: make sure the CA directory holds the CA and certificates (initCa), use them;
 * - `tls_dir = default`: use the CA directory's files, which must exist;
 * - `tls_dir = <path>`: use that directory.
 * `server_key`, `server_cert`, `trusted_client_ca` (and the tenant's `client_*`, `trusted_server_ca`)
 * are `default` (the file of the layout) or a path, relative paths being relative to the tls dir.
 * `trusted_client_crl` (`default`: the TLS directory's cacrl.der when it exists) is the CRL that
 * revokes admin certificates; one that is named but unreadable, malformed or not signed by a
 * trusted client CA stops start-up (fail closed).
 */
import * as path from "node:path"
import { Effect, Either } from "effect"
import { CA_FILES, DEFAULT_CA_DIR, initCa } from "./ca.js"
import { type TrustStore, trustStoreOf } from "./chain.js"
import { type RevocationList, revocationListOf } from "./crl.js"
import { verifyAgainstTrusted } from "./liveRevocations.js"
import { CaError, exists, readBytes, readText } from "./files.js"
import { parseCertificates } from "./parse.js"

export interface ServerTlsOptions {
  readonly tlsDir: string
  readonly serverKey: string
  readonly serverCert: string
  readonly trustedClientCa: ReadonlyArray<string>
  /** CRL of the client CAs: `default`/empty = the TLS directory's cacrl.der if present, else a path. */
  readonly trustedClientCrl?: string
  /** Where `default` and `generate` point; `/var/lib/attest/cv_ca` unless configured. */
  readonly caDir?: string
  /** Extra DNS names / IPs for a generated server certificate. */
  readonly serverNames?: ReadonlyArray<string>
}

export interface ClientTlsOptions {
  readonly tlsDir: string
  readonly clientKey: string
  readonly clientCert: string
  readonly trustedServerCa: ReadonlyArray<string>
  readonly caDir?: string
}

/** PEM strings ready for `https.createServer` / `https.request`. */
export interface TlsMaterial {
  readonly key: string
  readonly cert: string
  /** Trusted CA certificates (client CAs for a server, server CAs for a client). */
  readonly ca: ReadonlyArray<string>
  /** The files they were read from, for logs and `attest config show`. */
  readonly files: { readonly key: string; readonly cert: string; readonly ca: ReadonlyArray<string> }
  /** DER or PEM of the client CAs' CRL (servers only); absent = no revocation checking. */
  readonly crl?: { readonly file: string; readonly bytes: Uint8Array }
  /** Where the CRL is (or would be) for a server: watched, so one created later is picked up. */
  readonly crlFile?: string
}

const resolveFile = (dir: string, value: string, fallback: string): string =>
  value === "default" || value === "" ? path.join(dir, fallback) : path.isAbsolute(value) ? value : path.join(dir, value)

const resolveDir = Effect.fn("Tls.resolveDir")(function*(tlsDir: string, caDir: string, serverNames: ReadonlyArray<string>) {
  if (tlsDir === "generate") {
    yield* initCa({ dir: caDir, serverNames })
    return caDir
  }
  if (tlsDir === "default" || tlsDir === "") {
    if (!(yield* exists(path.join(caDir, CA_FILES.caCert)))) {
      return yield* new CaError({
        message: `tls_dir = default but ${caDir} holds no ${CA_FILES.caCert}; run 'attest ca init --dir ${caDir}' or set tls_dir = generate`,
        file: caDir
      })
    }
    return caDir
  }
  return tlsDir
})

const readAll = (key: string, cert: string, cas: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    return {
      key: yield* readText(key),
      cert: yield* readText(cert),
      ca: yield* Effect.forEach(cas, readText),
      files: { key, cert, ca: cas }
    } satisfies TlsMaterial
  })

export const resolveServerTls = Effect.fn("Tls.resolveServer")(function*(o: ServerTlsOptions) {
  const dir = yield* resolveDir(o.tlsDir, o.caDir ?? DEFAULT_CA_DIR, o.serverNames ?? [])
  const cas = o.trustedClientCa.length === 0 ? ["default"] : o.trustedClientCa
  const material = yield* readAll(
    resolveFile(dir, o.serverKey, CA_FILES.serverKey),
    resolveFile(dir, o.serverCert, CA_FILES.serverCert),
    cas.map((c) => resolveFile(dir, c, CA_FILES.caCert))
  )
  const explicit = o.trustedClientCrl !== undefined && o.trustedClientCrl !== "" && o.trustedClientCrl !== "default"
  const crlFile = resolveFile(dir, o.trustedClientCrl ?? "default", CA_FILES.crl)
  // A named CRL must exist; the default one is optional (a CA directory from before revocation).
  const withoutCrl: TlsMaterial = { ...material, crlFile }
  if (!explicit && !(yield* exists(crlFile))) return withoutCrl
  const withCrl: TlsMaterial = { ...withoutCrl, crl: { file: crlFile, bytes: yield* readBytes(crlFile) } }
  return withCrl
})

export const resolveClientTls = Effect.fn("Tls.resolveClient")(function*(o: ClientTlsOptions) {
  const dir = yield* resolveDir(o.tlsDir, o.caDir ?? DEFAULT_CA_DIR, [])
  const cas = o.trustedServerCa.length === 0 ? ["default"] : o.trustedServerCa
  return yield* readAll(
    resolveFile(dir, o.clientKey, CA_FILES.clientKey),
    resolveFile(dir, o.clientCert, CA_FILES.clientCert),
    cas.map((c) => resolveFile(dir, c, CA_FILES.caCert))
  )
})

/** The TLS options of a verifier or registrar config section (snake_case as in the file). */
export const serverTlsOptionsOf = (c: {
  readonly tls_dir: string
  readonly server_key: string
  readonly server_cert: string
  readonly trusted_client_ca: ReadonlyArray<string>
  readonly trusted_client_crl?: string
  readonly ca_dir: string
  readonly ip: string
}): ServerTlsOptions => ({
  tlsDir: c.tls_dir,
  serverKey: c.server_key,
  serverCert: c.server_cert,
  trustedClientCa: c.trusted_client_ca,
  ...(c.trusted_client_crl === undefined ? {} : { trustedClientCrl: c.trusted_client_crl }),
  caDir: c.ca_dir,
  // a listener on all interfaces names no useful address for the certificate
  serverNames: c.ip === "0.0.0.0" || c.ip === "::" ? [] : [c.ip]
})

/** Trust store of `TlsMaterial.ca` (every certificate of every PEM), for `isAdminCertificate`. */
export const trustStoreOfMaterial = (m: TlsMaterial): Effect.Effect<TrustStore, CaError> =>
  Effect.forEach(m.ca, (pem, i) => {
    const parsed = parseCertificates(new TextEncoder().encode(pem))
    return Either.isLeft(parsed)
      ? Effect.fail(new CaError({ message: `${m.files.ca[i]}: ${parsed.left.reason}`, file: m.files.ca[i] ?? "" }))
      : Effect.succeed(parsed.right)
  }).pipe(Effect.map((lists) => trustStoreOf(lists.flat(), m.files.ca.join(", "))))

/**
 * The verified CRL of `TlsMaterial.crl` as a revocation list: it must be signed by one of the
 * trusted client CAs. Undefined when the material has no CRL; an error naming the file otherwise.
 */
export const revocationListOfMaterial = (m: TlsMaterial, trusted: TrustStore): Effect.Effect<RevocationList | undefined, CaError> => {
  const crl = m.crl
  if (crl === undefined) return Effect.succeed(undefined)
  return Either.match(verifyAgainstTrusted(crl.bytes, trusted), {
    onLeft: (reason) => Effect.fail(new CaError({ message: `trusted_client_crl ${crl.file} cannot be used: ${reason}`, file: crl.file })),
    onRight: (verified) => Effect.succeed(revocationListOf([verified], crl.file))
  })
}
