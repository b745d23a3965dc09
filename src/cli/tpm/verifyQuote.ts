/**
 * `attest tpm verify-quote`: checks a Keylime quote string against an AK and a nonce with the same
 * pure verifier the verifier service uses, and prints the verdict and the quoted PCR values.
 * Exit code 0 only when every check passes.
 */
import { Command, Options } from "@effect/cli"
import { lazy } from "../lazy.js"

const ak = Options.file("ak", { exists: "yes" }).pipe(
  Options.withDescription(
    "File with the AK: its TPM2B_PUBLIC (binary, or base64 text as Keylime's aik_tpm and `attest tpm simulate` print it), or a PEM public key."
  )
)
const quote = Options.text("quote").pipe(
  Options.withDescription("The quote in Keylime's form r<TPMS_ATTEST>:<TPMT_SIGNATURE>:<PCR blob> (base64 parts), or @<file> holding it.")
)
const nonce = Options.text("nonce").pipe(
  Options.withDescription("The nonce the quote must carry as extraData, as the text the verifier sent (its ASCII bytes).")
)

export const verifyQuoteCommand = Command.make(
  "verify-quote",
  { ak, quote, nonce },
  lazy(() => import("./verifyQuote.run.js"), (m) => m.run)
).pipe(Command.withDescription("Verify a Keylime quote string offline against an AK and a nonce; prints the verdict and the PCR values."))
