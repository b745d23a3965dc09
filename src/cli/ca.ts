/** `attest ca …`: the server components CA (init, one admin certificate per administrator, revoke, list). */
import { Command, Options } from "@effect/cli"
import { Console, Effect, Either, Option } from "effect"
import * as path from "node:path"
import { CA_DIR_DOC, type CertificateSummary, listCertificates } from "../pki/caList.js"
import { CA_FILES, CERT_DAYS, DEFAULT_CA_DIR, initCa, issueAdmin } from "../pki/ca.js"
import { revocationListOf } from "../pki/crl.js"
import { CaError, exists, readBytes } from "../pki/files.js"
import { fromPem } from "../pki/pem.js"
import { loadCaCrl, revokeAdmin } from "../pki/revoke.js"

const dir = Options.directory("dir").pipe(
  Options.withDescription(CA_DIR_DOC),
  Options.withDefault(DEFAULT_CA_DIR)
)

/** Operator-facing failure: print the reason, exit non-zero. */
const reported = <A, E extends { readonly message: string }, R>(effect: Effect.Effect<A, E, R>) =>
  effect.pipe(Effect.tapError((e) => Console.error(`attest ca: ${e.message}`)))

const initCommand = Command.make(
  "init",
  {
    dir,
    names: Options.text("server-name").pipe(
      Options.withDescription("extra DNS name or IP for the server certificate (repeatable)"),
      Options.repeated
    )
  },
  ({ dir, names }) =>
    reported(Effect.gen(function*() {
      const r = yield* initCa({ dir: path.resolve(dir), serverNames: names })
      for (const f of r.created) yield* Console.log(`created ${f}`)
      for (const f of r.reused) yield* Console.log(`kept    ${f}`)
    }))
).pipe(Command.withDescription("Create the CA, the server certificate and the admin client certificate (CN client); existing files are kept."))

const issueAdminCommand = Command.make(
  "issue-admin",
  {
    dir,
    name: Options.text("name").pipe(Options.withDescription("administrator name: file stem and certificate CN")),
    days: Options.integer("days").pipe(Options.withDescription("validity in days"), Options.withDefault(CERT_DAYS))
  },
  ({ days, dir, name }) =>
    reported(Effect.gen(function*() {
      const r = yield* issueAdmin(path.resolve(dir), name, days)
      yield* Console.log(`created ${r.certPath}\ncreated ${r.keyPath} (mode 0600)`)
      yield* Console.log(`give both to ${name} securely; set [tenant] client_cert and client_key to them`)
    }))
).pipe(Command.withDescription("Issue a client certificate for one administrator (<name>-cert.crt, <name>-private.pem); never overwrites."))

const row = (c: CertificateSummary) =>
  [path.basename(c.file), c.subject, c.serial, c.usage.join(",") || "-", c.notAfter.toISOString(), c.status].join("\t")

const revokeCommand = Command.make(
  "revoke",
  {
    dir,
    name: Options.text("name").pipe(
      Options.withDescription("administrator whose <name>-cert.crt in the CA directory is revoked"),
      Options.optional
    ),
    serial: Options.text("serial").pipe(
      Options.withDescription("serial number (hex, as 'attest ca list' prints it) of a certificate to revoke"),
      Options.optional
    )
  },
  ({ dir, name, serial }) =>
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
      yield* Console.log("restart the verifier and registrar (or copy the CRL to their trusted_client_crl) for it to take effect")
    }))
).pipe(Command.withDescription(
  "Revoke an administrator's client certificate: add its serial to the CA's CRL (cacrl.der, cacrl.pem). " +
    "Servers read the CRL at start and then refuse that certificate on admin operations. Earlier revocations are kept."
))

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

const listCommand = Command.make("list", { dir }, ({ dir }) =>
  reported(Effect.gen(function*() {
    const revocations = yield* revocationsOf(path.resolve(dir))
    const certs = yield* listCertificates(path.resolve(dir), new Date(yield* Effect.clockWith((c) => c.currentTimeMillis)), revocations)
    yield* Console.log(["file", "subject", "serial", "eku", "expires", "status"].join("\t"))
    for (const c of certs) {
      if (Either.isLeft(c)) yield* Console.log(`${path.basename(c.left.file)}\t(unreadable: ${c.left.reason})`)
      else yield* Console.log(row(c.right))
    }
  }))).pipe(Command.withDescription("List every certificate in the CA directory: subject, serial, EKU, expiry, status (valid, expired, not yet valid, revoked by cacrl.der)."))

export const caCommand = Command.make("ca").pipe(
  Command.withDescription("The server components CA (spec §5.5): init, issue-admin, revoke, list."),
  Command.withSubcommands([initCommand, issueAdminCommand, revokeCommand, listCommand])
)
