/** `attest policy create measured-boot`: a reference state for the `example` policy from a UEFI event log. */
import { Command, Options } from "@effect/cli"
import { FileSystem } from "@effect/platform"
import { Console, Effect, Either, Option, Schema } from "effect"
import { createRefState } from "../../boot/createRefState.js"
import { type EventLog, parseEventLogInput } from "../../boot/eventLog.js"

/** A CLI failure already explained on stderr: one line, non-zero exit. */
export class BootCliError extends Schema.TaggedError<BootCliError>()("BootCliError", { message: Schema.String }) {}

/** Prints `attest policy <cmd>: <message>` and fails, so runMain exits with status 1. */
export const fatal = (cmd: string, message: string) =>
  Console.error(`attest policy ${cmd}: ${message}`).pipe(Effect.zipRight(Effect.fail(new BootCliError({ message }))))

/** Reads a binary or base64 event log file and parses it; any failure is one clear line. */
export const readEventLogFile = (cmd: string, path: string): Effect.Effect<EventLog, BootCliError, FileSystem.FileSystem> =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const bytes = yield* fs.readFile(path).pipe(Effect.catchAll((e) => fatal(cmd, `cannot read event log ${path}: ${e.message}`)))
    const parsed = parseEventLogInput(bytes)
    if (Either.isLeft(parsed)) return yield* fatal(cmd, `${path} is not a usable UEFI event log: ${parsed.left.message}`)
    return parsed.right
  })

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

export const createMeasuredBootCommand = Command.make("measured-boot", { eventlog, withoutSecureBoot, output }, (args) =>
  Effect.gen(function* () {
    const cmd = "create measured-boot"
    const log = yield* readEventLogFile(cmd, args.eventlog)
    const created = createRefState(log, { withoutSecureBoot: args.withoutSecureBoot })
    if (Either.isLeft(created)) return yield* fatal(cmd, created.left.message)
    for (const w of created.right.warnings) yield* Console.error(`attest policy ${cmd}: warning: ${w}`)
    const json = `${JSON.stringify(created.right.refstate, null, 2)}\n`
    if (Option.isNone(args.output)) return yield* Console.log(json.trimEnd())
    const out = args.output.value
    const fs = yield* FileSystem.FileSystem
    yield* fs.writeFileString(out, json).pipe(Effect.catchAll((e) => fatal(cmd, `cannot write ${out}: ${e.message}`)))
  })
).pipe(
  Command.withDescription(
    "Create a measured-boot reference state for the 'example' policy from a UEFI event log (Keylime's `create measured-boot`). " +
      "Records S-CRTM and firmware digests, PK/KEK/db/dbx keys, MokList digests, the shim, grub, kernel, initrd and command line of this boot, " +
      "and pins the firmware events the policy has no rule for (platform_events), so `check-boot` of the same log passes."
  )
)
