/** `attest policy verify`: check a DSSE-signed runtime policy with a public key or certificate. */
import { Command, Options } from "@effect/cli"
import { lazy } from "../lazy.js"

const policy = Options.file("policy", { exists: "yes" }).pipe(Options.withDescription("The signed policy (DSSE envelope JSON)."))
const key = Options.file("key", { exists: "yes" }).pipe(Options.withDescription("ECDSA public key (PEM) or X.509 certificate of the signer (runtime_policy_key)."))
const output = Options.file("output").pipe(
  Options.withDescription("Also write the verified policy (the envelope's payload) to this file."),
  Options.optional
)

export const verifyCommand = Command.make(
  "verify",
  { policy, key, output },
  lazy(() => import("./verify.run.js"), (m) => m.run)
).pipe(Command.withDescription("Verify a DSSE-signed runtime policy with the signer's public key or certificate."))
