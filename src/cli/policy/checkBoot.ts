/** `attest policy check-boot`: evaluate a UEFI event log against a measured-boot reference state offline. */
import { Command, Options } from "@effect/cli"
import { lazy } from "../lazy.js"

const refstate = Options.file("refstate", { exists: "yes" }).pipe(
  Options.withAlias("r"),
  Options.withDescription("Reference state JSON (from `attest policy create measured-boot` or Keylime)")
)
const eventlog = Options.file("eventlog", { exists: "yes" }).pipe(
  Options.withAlias("e"),
  Options.withDescription("UEFI event log, binary or base64")
)
const pcrs = Options.text("pcrs").pipe(
  Options.optional,
  Options.withDescription(
    `Quoted PCRs to compare with the log's replay: JSON {"sha256": {"0": "<hex>", ...}} inline or in a file, or a tpm2-tools PCR file (tpm2_quote -o). Without it only the policy is checked.`
  )
)
const policy = Options.text("policy").pipe(
  Options.withDefault("example"),
  Options.withDescription("Measured-boot policy: example, accept-all, reject-all")
)

export const checkBootCommand = Command.make(
  "check-boot",
  { refstate, eventlog, pcrs, policy },
  lazy(() => import("./checkBoot.run.js"), (m) => m.run)
).pipe(
  Command.withDescription(
    "Evaluate a UEFI event log against a measured-boot reference state offline, as the verifier does: replay the log, compare it with " +
      "the quoted PCRs when given, and apply the policy. Prints each failure with the event, the reason and Keylime's type string; exits 0 only on a pass."
  )
)
