/**
 * The server components CA, laid out as Keylime's `cv_ca` directory (spec §5.5):
 *   cacert.crt, ca-private.pem, ca-public.pem            the CA
 *   server-cert.crt, server-private.pem, server-public.pem  HTTPS certificate of verifier and registrar
 *   client-cert.crt, client-private.pem, client-public.pem  the admin client certificate (CN `client`)
 *   <name>-cert.crt, <name>-private.pem, <name>-public.pem  further administrators (§5.5.3)
 *   cacrl.der, cacrl.pem                                  the CA's revocation list (crl.ts, revoke.ts)
 *   RevocationNotifier-cert.crt, -private.pem, -public.pem  the key that signs revocation messages
 *                                                         (revocationNotifier.ts; no EKU: never an admin)
 * Creation is idempotent: existing files are reused, a CA is never overwritten.
 */
import type * as crypto from "node:crypto"
import * as path from "node:path"
import { Clock, Effect, Either } from "effect"
import { issueCrl } from "./crl.js"
import { EKU, generateKeyPair, issueCertificate, type KeyKind, privateKeyFromPem, privateKeyToPem, toPem } from "./certificate.js"
import { CaError, ensurePrivateDir, exists, readText, writeAtomic, writeNew } from "./files.js"
import { CA_DAYS, CA_FILES, certFile, CERT_DAYS, keyFile, publicFile } from "./layout.js"
import { fromPem } from "../crypto/pem.js"
import { parseCertificate } from "./parse.js"

export { CaError } from "./files.js"

export { CA_DAYS, CA_FILES, certFile, CERT_DAYS, DEFAULT_CA_DIR, keyFile, publicFile } from "./layout.js"

const DAY_MS = 86_400_000
// Backdated a little so a peer whose clock lags still accepts a fresh certificate.
const SKEW_MS = 5 * 60_000

export interface CaOptions {
  readonly dir: string
  /** Names (DNS or IP) of the servers, added to 127.0.0.1/::1/localhost in the server SAN. */
  readonly serverNames?: ReadonlyArray<string>
  readonly keyKind?: KeyKind
  readonly commonName?: string
}

export interface LoadedCa {
  readonly dir: string
  readonly certificate: Uint8Array
  readonly certificatePem: string
  readonly privateKey: crypto.KeyObject
}

export interface InitResult {
  readonly ca: LoadedCa
  readonly created: ReadonlyArray<string>
  readonly reused: ReadonlyArray<string>
}

const pkiFail = (file: string) => (e: { reason: string }) => new CaError({ message: `${file}: ${e.reason}`, file })

const validityFrom = (days: number) =>
  Effect.map(Clock.currentTimeMillis, (now) => ({
    notBefore: new Date(now - SKEW_MS),
    notAfter: new Date(now + days * DAY_MS)
  }))

const isIp = (s: string) => /^[0-9.]+$/.test(s) || s.includes(":")

/** Reads the CA certificate and key of `dir`. */
export const loadCa = Effect.fn("Ca.load")(function*(dir: string) {
  const certPath = path.join(dir, CA_FILES.caCert)
  const keyPath = path.join(dir, CA_FILES.caKey)
  const certificatePem = yield* readText(certPath)
  const block = fromPem(certificatePem).find((b) => b.label === "CERTIFICATE")
  if (block === undefined) return yield* new CaError({ message: `${certPath} holds no certificate`, file: certPath })
  yield* Either.mapLeft(parseCertificate(block.der), pkiFail(certPath))
  const privateKey = yield* Either.mapLeft(privateKeyFromPem(yield* readText(keyPath)), pkiFail(keyPath))
  return { dir, certificate: block.der, certificatePem, privateKey } satisfies LoadedCa
})

const createCa = Effect.fn("Ca.create")(function*(o: CaOptions) {
  const keys = generateKeyPair(o.keyKind ?? "rsa2048")
  const der = yield* Either.mapLeft(
    issueCertificate({
      subject: { CN: o.commonName ?? "Attest CA", O: "attest" },
      publicKey: keys.publicKey,
      signingKey: keys.privateKey,
      ...(yield* validityFrom(CA_DAYS)),
      basicConstraints: { ca: true, pathLen: 0 },
      keyUsage: ["keyCertSign", "cRLSign", "digitalSignature"]
    }),
    pkiFail(o.dir)
  )
  // Key first: if writing it fails, no certificate without a key is left behind.
  yield* writeNew(path.join(o.dir, CA_FILES.caKey), privateKeyToPem(keys.privateKey), 0o600)
  yield* writeNew(path.join(o.dir, CA_FILES.caPublic), keys.publicKey.export({ type: "spki", format: "pem" }).toString(), 0o644)
  const certificatePem = toPem(der)
  yield* writeNew(path.join(o.dir, CA_FILES.caCert), certificatePem, 0o644)
  return { dir: o.dir, certificate: der, certificatePem, privateKey: keys.privateKey } satisfies LoadedCa
})

export interface LeafRequest {
  /** File stem: `<name>-cert.crt`, `<name>-private.pem`, `<name>-public.pem`. */
  readonly name: string
  readonly commonName: string
  /** `signing`: no extended key usage, so the certificate is never an admin (client) certificate. */
  readonly usage: "server" | "client" | "signing"
  readonly days?: number
  readonly sanNames?: ReadonlyArray<string>
  readonly keyKind?: KeyKind
}

/** Issues a certificate and key under the CA's directory; fails if either file already exists. */
export const issueLeaf = Effect.fn("Ca.issueLeaf")(function*(ca: LoadedCa, req: LeafRequest) {
  const certPath = path.join(ca.dir, certFile(req.name))
  const keyPath = path.join(ca.dir, keyFile(req.name))
  for (const f of [certPath, keyPath]) {
    if (yield* exists(f)) return yield* new CaError({ message: `${f} already exists; refusing to overwrite it`, file: f })
  }
  const keys = generateKeyPair(req.keyKind ?? "rsa2048")
  const names = req.sanNames ?? []
  const der = yield* Either.mapLeft(
    issueCertificate({
      subject: { CN: req.commonName, O: "attest" },
      publicKey: keys.publicKey,
      issuer: { certificate: ca.certificate, privateKey: ca.privateKey },
      ...(yield* validityFrom(req.days ?? CERT_DAYS)),
      basicConstraints: { ca: false },
      keyUsage: req.usage === "signing" ? ["digitalSignature"] : ["digitalSignature", "keyEncipherment"],
      ...(req.usage === "signing" ? {} : { extendedKeyUsage: [req.usage === "server" ? EKU.serverAuth : EKU.clientAuth] }),
      ...(names.length > 0
        ? { subjectAltName: { dns: names.filter((n) => !isIp(n)), ip: names.filter(isIp) } }
        : {})
    }),
    pkiFail(certPath)
  )
  yield* writeNew(keyPath, privateKeyToPem(keys.privateKey), 0o600)
  yield* writeNew(path.join(ca.dir, publicFile(req.name)), keys.publicKey.export({ type: "spki", format: "pem" }).toString(), 0o644)
  yield* writeNew(certPath, toPem(der), 0o644)
  return { certPath, keyPath, certificate: der }
})

const defaultServerNames = ["localhost", "127.0.0.1", "::1"]

/**
 * `tls_dir = generate` / `attest ca init`: makes sure `dir` holds a CA, the server certificate and
 * the admin client certificate. Whatever exists is kept; only missing pieces are created.
 */
export const initCa = Effect.fn("Ca.init")(function*(o: CaOptions) {
  yield* ensurePrivateDir(o.dir)
  const created: Array<string> = []
  const reused: Array<string> = []
  const caCertPath = path.join(o.dir, CA_FILES.caCert)
  const haveCert = yield* exists(caCertPath)
  const haveKey = yield* exists(path.join(o.dir, CA_FILES.caKey))
  if (haveCert !== haveKey) {
    return yield* new CaError({
      message: `${o.dir} holds only half of a CA (${haveCert ? CA_FILES.caCert : CA_FILES.caKey}); refusing to replace it`,
      file: o.dir
    })
  }
  let ca: LoadedCa
  if (haveCert) {
    ca = yield* loadCa(o.dir)
    reused.push(caCertPath)
  } else {
    ca = yield* createCa(o)
    created.push(caCertPath)
  }
  const leaves: ReadonlyArray<LeafRequest> = [
    {
      name: "server",
      commonName: "server",
      usage: "server",
      sanNames: [...new Set([...defaultServerNames, ...(o.serverNames ?? [])])],
      ...(o.keyKind ? { keyKind: o.keyKind } : {})
    },
    { name: "client", commonName: "client", usage: "client", ...(o.keyKind ? { keyKind: o.keyKind } : {}) }
  ]
  for (const leaf of leaves) {
    const certPath = path.join(o.dir, certFile(leaf.name))
    if (yield* exists(certPath)) {
      reused.push(certPath)
      continue
    }
    yield* issueLeaf(ca, leaf)
    created.push(certPath)
  }
  // An empty CRL from the start, so servers always find one; an existing one (with entries) is kept.
  const crlPath = path.join(o.dir, CA_FILES.crl)
  if (yield* exists(crlPath)) {
    reused.push(crlPath)
  } else {
    yield* writeCrl(ca, [], 1n)
    created.push(crlPath)
  }
  return { ca, created, reused } satisfies InitResult
})

/** Signs and writes the CA's CRL (cacrl.der and cacrl.pem, 0644, each replaced atomically). */
export const writeCrl = Effect.fn("Ca.writeCrl")(function*(
  ca: LoadedCa,
  revoked: ReadonlyArray<{ readonly serial: string; readonly revokedAt: Date }>,
  crlNumber: bigint
) {
  const crlPath = path.join(ca.dir, CA_FILES.crl)
  const { notAfter, notBefore } = yield* validityFrom(CERT_DAYS)
  const der = yield* Either.mapLeft(
    issueCrl({
      issuer: { certificate: ca.certificate, privateKey: ca.privateKey },
      thisUpdate: new Date(notBefore.getTime() + SKEW_MS),
      nextUpdate: notAfter,
      revoked,
      crlNumber
    }),
    pkiFail(crlPath)
  )
  yield* writeAtomic(crlPath, der, 0o644)
  yield* writeAtomic(path.join(ca.dir, CA_FILES.crlPem), toPem(der, "X509 CRL"), 0o644)
  return { crlPath, der }
})

/** `attest ca issue-admin --name <n>`: one client certificate per administrator (spec §5.5.3). */
export const issueAdmin = Effect.fn("Ca.issueAdmin")(function*(dir: string, name: string, days = CERT_DAYS) {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(name) || name === "ca" || name === "server") {
    return yield* new CaError({ message: `administrator name '${name}' must be letters, digits, '.', '_' or '-' (and not ca or server)` })
  }
  const ca = yield* loadCa(dir)
  return yield* issueLeaf(ca, { name, commonName: name, usage: "client", days })
})
