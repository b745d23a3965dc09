/**
 * `attest ear verify <token> [--jwks file | --key pem] [--json]`: checks an EAR's signature with the
 * verifier's published key and prints its status and claims. Exit 0 when every appraisal is
 * affirming, 1 otherwise (or when the token does not verify), 2 usage.
 */
import { Args, Command, Options } from "@effect/cli"
import { lazy } from "../lazy.js"

const token = Args.text({ name: "token" }).pipe(Args.withDescription("The EAR (a JWT), or - to read it from standard input."))
const jwks = Options.file("jwks", { exists: "yes" }).pipe(Options.optional, Options.withDescription("The verifier's JWKS document (GET /.well-known/jwks.json)."))
const key = Options.file("key", { exists: "yes" }).pipe(Options.optional, Options.withDescription("The verifier's public key, certificate or signing key (PEM)."))
const json = Options.boolean("json").pipe(Options.withDescription("Print the verified claims as JSON."))

export const verifyEarCommand = Command.make(
  "verify",
  { token, jwks, key, json },
  lazy(() => import("./verify.run.js"), (m) => m.run)
).pipe(
  Command.withDescription(
    "Verify an EAR (ES256 JWT) with the verifier's key (--jwks or --key) and print its status, trustworthiness vector and failures. Exit 0 affirming, 1 otherwise, 2 usage."
  )
)
