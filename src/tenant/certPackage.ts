/**
 * Certificate packages as Keylime's tenant makes them (`tenant.py` with `--cert`, `ca_util
 * cmd_certpkg`): a certificate and key for the agent issued by the CA in `<ca dir>` (kept there as
 * `<agent id>-cert.crt`, `-private.pem`, `-public.pem`, reused when the agent is enrolled again),
 * the CA certificate and CRL, the revocation notifier's certificate and every `--include`d file
 * (a directory gives its files; an `autorun.sh` runs on arrival when the agent is configured to),
 * zipped. It becomes the encrypted payload; the notifier's private key becomes the verifier's
 * `revocation_key`, and `metadata` names the agent certificate's serial and subject.
 */
import { X509Certificate } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { Clock, Effect } from "effect"
import { CA_FILES, certFile, issueLeaf, keyFile, loadCa, publicFile } from "../pki/ca.js"
import { exists, readBytes } from "../pki/files.js"
import { ensureRevocationNotifier, REVOCATION_NOTIFIER } from "../pki/revocationNotifier.js"
import { TenantError } from "./errors.js"
import { writeZip, type ZipInput } from "./zip.js"

export interface CertPackage {
  readonly zip: Uint8Array
  /** File names in the zip, in order. */
  readonly names: ReadonlyArray<string>
  /** PEM of the notifier's private key: the verifier's `revocation_key`. */
  readonly revocationKey: string
  /** The creation body's `metadata`: `{"cert_serial": <int>, "subject": "<RFC 4514>"}` (Keylime's). */
  readonly metadata: string
  readonly certSerial: string
  readonly subject: string
}

const fail = (message: string) => new TenantError({ message: `certificate package: ${message}` })

/** The files `--include` names: a file as itself, a directory as its regular files (not recursive). */
export const includedFiles = (paths: ReadonlyArray<string>) =>
  Effect.try({
    try: () =>
      paths.flatMap((p) =>
        fs.statSync(p).isDirectory()
          ? fs.readdirSync(p, { withFileTypes: true }).filter((d) => d.isFile()).map((d) => path.join(p, d.name)).sort()
          : [p]
      ),
    catch: (e) => fail(`--include: ${e instanceof Error ? e.message : String(e)}`)
  })

/** RFC 4514 text of a certificate's subject (last RDN first, as Python's `rfc4514_string`). */
const rfc4514 = (x: X509Certificate): string => (x.subject ?? "").split("\n").filter((l) => l.length > 0).reverse().join(",")

/**
 * Keylime's CA directory keeps its CA key in private.yml, encrypted with the CA password (its
 * ca_util); attest reads a PEM key beside cacert.crt. What to pass instead, exactly.
 */
export const keylimeCaAdvice = (caDir: string) =>
  `--cert ${caDir}: a Keylime CA directory: its CA key is in private.yml, encrypted with the CA password, which attest does not read. ` +
  `Write the key beside cacert.crt as ${CA_FILES.caKey} (PEM, not encrypted), in that directory: ` +
  `python3 -c "from keylime import ca_util; import getpass; ca_util.setpassword(getpass.getpass()); open('${CA_FILES.caKey}', 'wb').write(ca_util.read_private()[0]['ca'])" ` +
  `(then chmod 600 ${CA_FILES.caKey}), and give --cert ${caDir} again; or give attest's own CA directory (attest ca init --dir <dir>)`

export const makeCertPackage = (o: { readonly caDir: string; readonly agentId: string; readonly include: ReadonlyArray<string> }) =>
  Effect.gen(function*() {
    if ((yield* exists(path.join(o.caDir, "private.yml"))) && !(yield* exists(path.join(o.caDir, CA_FILES.caKey)))) {
      return yield* new TenantError({ message: keylimeCaAdvice(o.caDir) })
    }
    const caErr = (e: { readonly message: string }) => fail(`${o.caDir}: ${e.message}`)
    const ca = yield* loadCa(o.caDir).pipe(Effect.mapError(caErr))
    if (!(yield* exists(path.join(o.caDir, certFile(o.agentId))))) {
      yield* issueLeaf(ca, { name: o.agentId, commonName: o.agentId, usage: "server" }).pipe(Effect.mapError(caErr))
    }
    const notifier = yield* ensureRevocationNotifier(o.caDir).pipe(Effect.mapError(caErr))
    const read = (file: string) => readBytes(path.join(o.caDir, file)).pipe(Effect.mapError(caErr))
    const entries: Array<ZipInput> = []
    for (const f of [publicFile(o.agentId), certFile(o.agentId), keyFile(o.agentId), CA_FILES.caCert]) entries.push({ name: f, data: yield* read(f) })
    for (const f of [CA_FILES.crl, CA_FILES.crlPem]) {
      if (yield* exists(path.join(o.caDir, f))) entries.push({ name: f, data: yield* read(f) })
    }
    entries.push({ name: certFile(REVOCATION_NOTIFIER), data: new Uint8Array(Buffer.from(notifier.certificatePem)) })
    for (const file of yield* includedFiles(o.include)) {
      const name = path.basename(file)
      if (entries.some((e) => e.name === name)) return yield* fail(`--include ${file}: the package already holds a file named ${name}`)
      entries.push({ name, data: yield* readBytes(file).pipe(Effect.mapError((e) => fail(`--include ${file}: ${e.message}`))) })
    }
    const cert = new X509Certificate(entries[1]!.data)
    const certSerial = BigInt(`0x${cert.serialNumber}`).toString()
    const subject = rfc4514(cert)
    const zip = writeZip(entries, new Date(yield* Clock.currentTimeMillis))
    return {
      zip,
      names: entries.map((e) => e.name),
      revocationKey: notifier.privateKeyPem,
      metadata: `{"cert_serial": ${certSerial}, "subject": ${JSON.stringify(subject)}}`,
      certSerial,
      subject
    } satisfies CertPackage
  })
