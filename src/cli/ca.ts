/** `attest ca …`: the server components CA (init, one admin certificate per administrator, revoke, list). */
import { Command, Options } from "@effect/cli"
import { CERT_DAYS, DEFAULT_CA_DIR } from "../pki/layout.js"
import { lazy } from "./lazy.js"

const load = () => import("./ca.run.js")

const dir = Options.directory("dir").pipe(
  Options.withDescription("CA directory (Keylime's cv_ca layout)"),
  Options.withDefault(DEFAULT_CA_DIR)
)

const initCommand = Command.make(
  "init",
  {
    dir,
    names: Options.text("server-name").pipe(
      Options.withDescription("extra DNS name or IP for the server certificate (repeatable)"),
      Options.repeated
    )
  },
  lazy(load, (m) => m.init)
).pipe(Command.withDescription("Create the CA, the server certificate and the admin client certificate (CN client); existing files are kept."))

const issueAdminCommand = Command.make(
  "issue-admin",
  {
    dir,
    name: Options.text("name").pipe(Options.withDescription("administrator name: file stem and certificate CN")),
    days: Options.integer("days").pipe(Options.withDescription("validity in days"), Options.withDefault(CERT_DAYS))
  },
  lazy(load, (m) => m.issueAdmin)
).pipe(Command.withDescription("Issue a client certificate for one administrator (<name>-cert.crt, <name>-private.pem); never overwrites."))

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
  lazy(load, (m) => m.revoke)
).pipe(Command.withDescription(
  "Revoke an administrator's client certificate: add its serial to the CA's CRL (cacrl.der, cacrl.pem). " +
    "Running servers pick the new CRL up without a restart (they watch the file and re-read it every crl_refresh_interval) and refuse that certificate on admin operations. Earlier revocations are kept."
))

const listCommand = Command.make("list", { dir }, lazy(load, (m) => m.list)).pipe(
  Command.withDescription("List every certificate in the CA directory: subject, serial, EKU, expiry, status (valid, expired, not yet valid, revoked by cacrl.der).")
)

const revocationNotifierCommand = Command.make("revocation-notifier", { dir }, lazy(load, (m) => m.revocationNotifier)).pipe(
  Command.withDescription(
    "Make sure the CA directory holds the revocation notifier's key pair (RevocationNotifier-cert.crt, RevocationNotifier-private.pem): " +
      "the verifier signs revocation messages with the key, agents check them with the certificate that 'attest tenant add --cert' packages. Never overwrites."
  )
)

export const caCommand = Command.make("ca").pipe(
  Command.withDescription("The server components CA (spec §5.5): init, issue-admin, revoke, list, revocation-notifier."),
  Command.withSubcommands([initCommand, issueAdminCommand, revokeCommand, listCommand, revocationNotifierCommand])
)
