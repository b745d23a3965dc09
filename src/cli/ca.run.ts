/** How the `attest ca …` commands run: each prints what it made or found, or one line saying why not. */
import { Console, Effect, Either, Option } from "effect"
import * as path from "node:path"
import { type CertificateSummary, listCertificates } from "../pki/caList.js"
import { CA_FILES, initCa, issueAdmin as issueAdminCertificate } from "../pki/ca.js"
import { revocationListOf } from "../pki/crl.js"
import { CaError, exists, readBytes } from "../pki/files.js"
import { fromPem } from "../crypto/pem.js"
import { ensureRevocationNotifier } from "../pki/revocationNotifier.js"
import { loadCaCrl, revokeAdmin } from "../pki/revoke.js"

/** Operator-facing failure: print the reason, exit non-zero. */
const reported = <A, E extends { readonly message: string }, R>(effect: Effect.Effect<A, E, R>) =>
  effect.pipe(Effect.tapError((e) => Console.error(`attest ca: ${e.message}`)))

export const init = ({ dir, names }: { readonly dir: string; readonly names: ReadonlyArray<string> }) =>
  reported(Effect.gen(function*() {
    const r = yield* initCa({ dir: path.resolve(dir), serverNames: names })
    for (const f of r.created) yield* Console.log(`created ${f}`)
    for (const f of r.reused) yield* Console.log(`kept    ${f}`)
  }))

export const issueAdmin = ({ days, dir, name }: { readonly dir: string; readonly name: string; readonly days: number }) =>
  reported(Effect.gen(function*() {
    const r = yield* issueAdminCertificate(path.resolve(dir), name, days)
    yield* Console.log(`created ${r.certPath}\ncreated ${r.keyPath} (mode 0600)`)
    yield* Console.log(`give both to ${name} securely; set [tenant] client_cert and client_key to them`)
  }))

const row = (c: CertificateSummary) =>
  [path.basename(c.file), c.subject, c.serial, c.usage.join(",") || "-", c.notAfter.toISOString(), c.status].join("\t")

export const revoke = ({ dir, name, serial }: {
  readonly dir: string
  readonly name: Option.Option<string>
  readonly serial: Option.Option<string>
}) =>
  reported(Effect.gen(function*() {
    const target = Option.isSome(name) && Option.isNone(serial)
      ? { name: name.value }
      : Option.isSome(serial) && Option.isNone(name)
      ? { serial: serial.value }
      : yield* new CaError({ message: "give exactly one of --name <administrator> or --serial <hex>" })
    const r = yield* revokeAdmin({ dir: path.resolve(dir), ...target })
    if (!r.added) {
      yield* Console.log(`serial ${r.serial} is already revoked in ${r.crlPath} (CRL number ${r.crlNumber}); nothing changed`)
      return
    }
    yield* Console.log(`revoked serial ${r.serial}: ${r.crlPath} (and cacrl.pem) now at CRL number ${r.crlNumber}`)
    yield* Console.log(REVOCATION_LIVE)
  }))

/** What a revocation does to running servers: nothing to restart (src/pki/liveRevocations.ts). */
export const REVOCATION_LIVE =
  "running servers whose trusted_client_crl is this CRL (the default for this CA directory) refuse the certificate without a restart: " +
  "they see the file change, or re-read it within crl_refresh_interval; a server whose trusted_client_crl is another file needs this CRL copied there"

/** The directory's verified CRL as a revocation list; none when the directory has no CA or no CRL. */
const revocationsOf = (dir: string) =>
  Effect.gen(function*() {
    const caPath = path.join(dir, CA_FILES.caCert)
    if (!(yield* exists(caPath))) return undefined
    const block = fromPem(new TextDecoder().decode(yield* readBytes(caPath))).find((b) => b.label === "CERTIFICATE")
    if (block === undefined) return undefined
    const crl = yield* loadCaCrl(dir, block.der)
    return crl === undefined ? undefined : revocationListOf([crl], path.join(dir, CA_FILES.crl))
  })

export const list = ({ dir }: { readonly dir: string }) =>
  reported(Effect.gen(function*() {
    const revocations = yield* revocationsOf(path.resolve(dir))
    const certs = yield* listCertificates(path.resolve(dir), new Date(yield* Effect.clockWith((c) => c.currentTimeMillis)), revocations)
    yield* Console.log(["file", "subject", "serial", "eku", "expires", "status"].join("\t"))
    for (const c of certs) {
      if (Either.isLeft(c)) yield* Console.log(`${path.basename(c.left.file)}\t(unreadable: ${c.left.reason})`)
      else yield* Console.log(row(c.right))
    }
  }))

export const revocationNotifier = ({ dir }: { readonly dir: string }) =>
  reported(Effect.gen(function*() {
    const r = yield* ensureRevocationNotifier(path.resolve(dir))
    const verb = r.created ? "created" : "kept   "
    yield* Console.log(`${verb} ${r.certPath}\n${verb} ${r.keyPath}${r.created ? " (mode 0600)" : ""}`)
    yield* Console.log("'attest tenant add --cert' puts the certificate in the agent's package and gives the key to the verifier as revocation_key")
  }))
