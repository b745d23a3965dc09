/** `attest policy sign`: wrap a runtime policy in a DSSE envelope signed with an ECDSA key. */
import { Command, Options } from "@effect/cli"
import { lazy } from "../lazy.js"

const policy = Options.file("policy", { exists: "yes" }).pipe(Options.withDescription("The runtime policy (v1 JSON) to sign; it is validated first."))
const key = Options.file("key", { exists: "yes" }).pipe(Options.withDescription("ECDSA private key (PEM), e.g. `openssl ecparam -genkey -name prime256v1`."))
const cert = Options.file("cert", { exists: "yes" }).pipe(
  Options.withDescription("X.509 certificate of the key, checked to belong to it; verifiers may then use the certificate as runtime_policy_key."),
  Options.optional
)
const output = Options.file("output").pipe(Options.withDescription("Write the signed envelope here instead of stdout."), Options.optional)

export const signCommand = Command.make(
  "sign",
  { policy, key, cert, output },
  lazy(() => import("./sign.run.js"), (m) => m.run)
).pipe(Command.withDescription("Sign a runtime policy (DSSE envelope, ECDSA key), as keylime_sign_runtime_policy does."))
