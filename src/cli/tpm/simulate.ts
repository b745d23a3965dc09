/**
 * `attest tpm simulate`: a fresh simulated TPM's EK and AK and one quote in Keylime's quote-string
 * form, with its nonce, so `attest tpm verify-quote` can be tried by hand:
 *   attest tpm simulate --write-ak ak.pub          (prints nonce: … and quote: …)
 *   attest tpm verify-quote --ak ak.pub --nonce <nonce> --quote <quote>
 */
import { Command, Options } from "@effect/cli"
import { lazy } from "../lazy.js"

const akAlg = Options.choice("ak-alg", ["rsa", "ecc"]).pipe(
  Options.withDefault("rsa" as const),
  Options.withDescription("AK type: rsa (RSA 2048, RSASSA-SHA256, under the RSA EK) or ecc (P-256, ECDSA-SHA256, under the ECC EK).")
)
const seed = Options.text("seed").pipe(
  Options.optional,
  Options.withDescription("Seed of the simulated TPM: the same seed gives the same EK and AK (default: random).")
)
const nonce = Options.text("nonce").pipe(
  Options.optional,
  Options.withDescription("Nonce to quote over, as text (default: 20 random letters and digits, as a Keylime verifier sends).")
)
const pcrs = Options.text("pcrs").pipe(
  Options.withDefault("sha256:0,1,10,16"),
  Options.withDescription("PCR selection in tpm2-tools form, banks joined by '+': e.g. sha1:10+sha256:0,1,10,16.")
)
const writeAk = Options.file("write-ak").pipe(
  Options.optional,
  Options.withDescription("Also write the AK's TPM2B_PUBLIC (binary) to this file, for `verify-quote --ak`.")
)

export const simulateCommand = Command.make(
  "simulate",
  { akAlg, seed, nonce, pcrs, writeAk },
  lazy(() => import("./simulate.run.js"), (m) => m.run)
).pipe(
  Command.withDescription(
    "Print a fresh simulated TPM's EK and AK (base64 TPM2B_PUBLIC and PEM) and a quote in Keylime's quote-string form with its nonce."
  )
)
