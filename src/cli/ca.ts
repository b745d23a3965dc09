/** `attest ca …`: the server components CA (init, one admin certificate per administrator, list). */
import { Command, Options } from "@effect/cli"
import { Console, Effect, Either } from "effect"
import * as path from "node:path"
import { CA_DIR_DOC, type CertificateSummary, listCertificates } from "../pki/caList.js"
import { CERT_DAYS, DEFAULT_CA_DIR, initCa, issueAdmin } from "../pki/ca.js"

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

const listCommand = Command.make("list", { dir }, ({ dir }) =>
  reported(Effect.gen(function*() {
    const certs = yield* listCertificates(path.resolve(dir), new Date(yield* Effect.clockWith((c) => c.currentTimeMillis)))
    yield* Console.log(["file", "subject", "serial", "eku", "expires", "status"].join("\t"))
    for (const c of certs) {
      if (Either.isLeft(c)) yield* Console.log(`${path.basename(c.left.file)}\t(unreadable: ${c.left.reason})`)
      else yield* Console.log(row(c.right))
    }
  }))).pipe(Command.withDescription("List every certificate in the CA directory: subject, serial, EKU, expiry."))

export const caCommand = Command.make("ca").pipe(
  Command.withDescription("The server components CA (spec §5.5): init, issue-admin, list."),
  Command.withSubcommands([initCommand, issueAdminCommand, listCommand])
)
