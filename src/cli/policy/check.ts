/**
 * `attest policy check`: evaluate an IMA measurement list against a runtime policy offline and say,
 * per failing entry, which entry, which path, why, and Keylime's failure type. Exit 0 only on a pass.
 */
import { Command, Options } from "@effect/cli"
import { lazy } from "../lazy.js"
import { hashAlgOption } from "./options.js"

const policy = Options.file("policy", { exists: "yes" }).pipe(
  Options.withDescription("Runtime policy file: v1 JSON, a DSSE-signed envelope, an old JSON allowlist or a '<digest>  <path>' allowlist.")
)
const imaList = Options.file("ima-list", { exists: "yes" }).pipe(
  Options.withDescription("IMA measurement list in ASCII form, e.g. a copy of /sys/kernel/security/ima/ascii_runtime_measurements.")
)
const pcr10 = Options.text("pcr10").pipe(
  Options.withDescription("Quoted PCR 10 value (hex). The list must replay to it; its length selects the bank unless --hash-alg is given."),
  Options.optional
)
const hashAlg = hashAlgOption("PCR bank to replay the list into (default: from --pcr10's length, else sha256).").pipe(Options.optional)
const bootAggregate = Options.text("boot-aggregate").pipe(
  Options.withDescription("An extra allowed boot_aggregate digest (hex), e.g. computed from the machine's UEFI event log. Repeatable."),
  Options.repeated
)
const imaKey = Options.text("ima-key").pipe(
  Options.withDescription("PEM public key or certificate for ima-sig file signatures (like ima_sign_verification_keys). Repeatable."),
  Options.repeated
)

export const checkCommand = Command.make(
  "check",
  { policy, imaList, pcr10, hashAlg, bootAggregate, imaKey },
  lazy(() => import("./check.run.js"), (m) => m.run)
).pipe(Command.withDescription("Evaluate an IMA measurement list against a runtime policy offline; exit 0 only when it passes."))
