/** `attest policy create measured-boot`: a reference state for the `example` policy from a UEFI event log. */
import { Command, Options } from "@effect/cli"
import { lazy } from "../lazy.js"

const eventlog = Options.file("eventlog", { exists: "yes" }).pipe(
  Options.withAlias("e"),
  Options.withDescription("UEFI event log: binary (/sys/kernel/security/tpm0/binary_bios_measurements) or base64 as the agent sends it")
)
const withoutSecureBoot = Options.boolean("without-secureboot").pipe(
  Options.withAlias("i"),
  Options.withDescription("Allow a log with SecureBoot disabled (measured boot only); adds the vmlinuz digest")
)
const output = Options.file("output").pipe(
  Options.withAlias("o"),
  Options.optional,
  Options.withDescription("Write the reference state here instead of standard output")
)

export const createMeasuredBootCommand = Command.make(
  "measured-boot",
  { eventlog, withoutSecureBoot, output },
  lazy(() => import("./createMeasuredBoot.run.js"), (m) => m.run)
).pipe(
  Command.withDescription(
    "Create a measured-boot reference state for the 'example' policy from a UEFI event log (Keylime's `create measured-boot`). " +
      "Records S-CRTM and firmware digests, PK/KEK/db/dbx keys, MokList digests, the shim, grub, kernel, initrd and command line of this boot, " +
      "and pins the firmware events the policy has no rule for (platform_events), so `check-boot` of the same log passes."
  )
)
