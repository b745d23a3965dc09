/**
 * The agent's HTTPS server certificate (spec §5.3): self-signed by default, or issued by a given CA,
 * with only the Server Authentication EKU. Kept in the agent's data dir (key 0600) so a restart
 * presents the same certificate the registrar and verifier already hold as `mtls_cert`.
 */
import * as crypto from "node:crypto"
import { existsSync } from "node:fs"
import { mkdir, readFile, writeFile } from "node:fs/promises"
import { join } from "node:path"
import { Clock, Data, Effect, Either } from "effect"
import { EKU, issueCertificate, toPem } from "../pki/certificate.js"

export class AgentTlsError extends Data.TaggedError("AgentTlsError")<{ readonly message: string }> {}

export interface ServerTls {
  readonly cert: string
  readonly key: string
}

export interface ServerCertOptions {
  readonly dataDir: string
  readonly agentId: string
  /** Names and addresses for the SAN (the contact address at least). */
  readonly names: ReadonlyArray<string>
  /** Issue from this CA instead of self-signing. */
  readonly issuer?: { readonly certificatePem: string; readonly privateKeyPem: string }
}

export const CERT_FILE = "server-cert.crt"
export const KEY_FILE = "server-private.pem"

const isIp = (s: string) => /^[0-9.]+$/.test(s) || s.includes(":")

const io = (what: string) => (e: unknown) => new AgentTlsError({ message: `${what}: ${e instanceof Error ? e.message : String(e)}` })

/** Loads `<dataDir>/server-cert.crt` and its key, or makes and stores them. */
export const loadOrCreateServerTls = Effect.fn("Agent.serverTls")(function*(o: ServerCertOptions) {
  const certPath = join(o.dataDir, CERT_FILE)
  const keyPath = join(o.dataDir, KEY_FILE)
  if (existsSync(certPath) && existsSync(keyPath)) {
    const tls = yield* Effect.tryPromise({
      try: async () => ({ cert: await readFile(certPath, "utf8"), key: await readFile(keyPath, "utf8") }),
      catch: io(`reading ${certPath}`)
    })
    const still = Either.try(() => new crypto.X509Certificate(tls.cert))
    const now = new Date(yield* Clock.currentTimeMillis)
    if (Either.isRight(still) && new Date(still.right.validTo) > now) return tls
    yield* Effect.logWarning(`${certPath} is unreadable or expired; making a new server certificate`)
  }
  // on the thread pool: agents starting together (attest up) generate their keys in parallel
  const keys = yield* Effect.async<crypto.KeyPairKeyObjectResult, AgentTlsError>((resume) =>
    crypto.generateKeyPair("rsa", { modulusLength: 2048 }, (error, publicKey, privateKey) =>
      resume(error ? Effect.fail(io("generating the server key")(error)) : Effect.succeed({ publicKey, privateKey }))
    )
  )
  const now = yield* Clock.currentTimeMillis
  const issuer = o.issuer === undefined ? undefined : yield* Effect.try({
    try: () => ({
      certificate: new Uint8Array(new crypto.X509Certificate(o.issuer!.certificatePem).raw),
      privateKey: crypto.createPrivateKey(o.issuer!.privateKeyPem)
    }),
    catch: io("reading the issuing CA")
  })
  const der = yield* Either.mapLeft(
    issueCertificate({
      subject: { CN: o.agentId, O: "attest agent" },
      publicKey: keys.publicKey,
      ...(issuer === undefined ? { signingKey: keys.privateKey } : { issuer }),
      notBefore: new Date(now - 5 * 60_000),
      notAfter: new Date(now + 365 * 86_400_000),
      basicConstraints: { ca: false },
      keyUsage: ["digitalSignature", "keyEncipherment"],
      extendedKeyUsage: [EKU.serverAuth],
      subjectAltName: { dns: o.names.filter((n) => !isIp(n)), ip: o.names.filter(isIp) }
    }),
    (e) => new AgentTlsError({ message: `issuing the server certificate: ${e.reason}` })
  )
  const tls = { cert: toPem(der), key: keys.privateKey.export({ type: "pkcs8", format: "pem" }).toString() }
  yield* Effect.tryPromise({
    try: async () => {
      await mkdir(o.dataDir, { recursive: true, mode: 0o700 })
      await writeFile(keyPath, tls.key, { mode: 0o600 })
      await writeFile(certPath, tls.cert, { mode: 0o644 })
    },
    catch: io(`writing ${certPath}`)
  })
  yield* Effect.logInfo(`server certificate ${issuer === undefined ? "self-signed" : "issued by the given CA"} and stored in ${certPath}`)
  return tls
})
