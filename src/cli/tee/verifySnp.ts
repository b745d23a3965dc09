/**
 * `attest tee verify-snp`: verifies an SEV-SNP attestation report and its VCEK offline with the
 * module the verifier uses (src/tee): chain to AMD's ARK/ASK of the VCEK's product line, TCB and
 * chip id, signature and, given --nonce and the TEE key, freshness. Prints the verdict and the
 * claims (or JSON). Exit 0 valid, 1 invalid (one line per failure), 2 usage.
 */
import { Command, Options } from "@effect/cli"
import { lazy } from "../lazy.js"

const report = Options.file("report", { exists: "yes" }).pipe(
  Options.withDescription("The SNP attestation report: binary (1184 bytes), hex text, or base64 as the request's snp-report.")
)
const vcek = Options.file("vcek", { exists: "yes" }).pipe(Options.withDescription("The VCEK certificate that signed it, DER or PEM (from AMD's key server)."))
const nonce = Options.text("nonce").pipe(Options.optional, Options.withDescription("The verifier's nonce as the request's `nonce` (base64); checks freshness with --pubkey-x/-y."))
const pubkeyX = Options.text("pubkey-x").pipe(Options.optional, Options.withDescription("The TEE key's x coordinate as tee-pubkey-x-b64 (URL-safe base64, no padding)."))
const pubkeyY = Options.text("pubkey-y").pipe(Options.optional, Options.withDescription("The TEE key's y coordinate as tee-pubkey-y-b64."))
const json = Options.boolean("json").pipe(Options.withDescription("Print the verdict as JSON: { valid, failures, claims }."))

export const verifySnpCommand = Command.make(
  "verify-snp",
  { report, vcek, nonce, pubkeyX, pubkeyY, json },
  lazy(() => import("./verifySnp.run.js"), (m) => m.run)
).pipe(
  Command.withDescription(
    "Verify an AMD SEV-SNP attestation report offline against its VCEK: the chain ARK → ASK → VCEK to AMD's roots (shipped) for the VCEK's product line, " +
      "the VCEK's TCB and chip id, the P-384 signature, and with --nonce/--pubkey-x/--pubkey-y the freshness binding. Exit 0 valid, 1 invalid, 2 usage."
  )
)
