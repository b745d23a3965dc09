/** How `attest policy check-boot` runs: replay the log, compare with quoted PCRs when given, apply the policy. */
import { FileSystem } from "@effect/platform"
import { Console, Effect, Either, Option, Schema } from "effect"
import { evaluateMeasuredBootNamed } from "../../boot/evaluate.js"
import { MbPolicyRegistry } from "../../boot/policy.js"
import { replayPcrs } from "../../boot/replay.js"
import { hashAlgFromName } from "../../tpm/hashAlg.js"
import { parsePcrBlob } from "../../tpm/pcrBlob.js"
import type { PcrBankValues, PcrValues } from "../../tpm/Tpm.js"
import { fatal, readEventLogFile } from "./createMeasuredBoot.run.js"

const CMD = "check-boot"


const PcrJson = Schema.parseJson(Schema.Record({ key: Schema.String, value: Schema.Record({ key: Schema.String, value: Schema.String }) }))

const pcrsFromJson = (text: string): Either.Either<PcrValues, string> => {
  const decoded = Schema.decodeUnknownEither(PcrJson)(text)
  if (Either.isLeft(decoded)) return Either.left(`--pcrs is not JSON of the form {"sha256": {"0": "<hex>"}}`)
  const banks: Array<PcrBankValues> = []
  for (const [name, values] of Object.entries(decoded.right)) {
    const hash = hashAlgFromName(name)
    if (hash === undefined) return Either.left(`--pcrs: unknown hash algorithm '${name}'`)
    const map = new Map<number, Uint8Array>()
    for (const [pcr, hex] of Object.entries(values)) {
      const h = hex.replace(/^0x/i, "")
      if (!/^\d+$/.test(pcr) || Number(pcr) > 23) return Either.left(`--pcrs: '${pcr}' is not a PCR number`)
      if (!/^(?:[0-9a-fA-F]{2})+$/.test(h)) return Either.left(`--pcrs: PCR ${pcr} of ${name} is not hex`)
      map.set(Number(pcr), new Uint8Array(Buffer.from(h, "hex")))
    }
    banks.push({ hash, values: map })
  }
  return Either.right(banks)
}

const readPcrs = (value: string) =>
  Effect.gen(function* () {
    if (value.trimStart().startsWith("{")) return pcrsFromJson(value)
    const fs = yield* FileSystem.FileSystem
    const bytes = yield* fs.readFile(value).pipe(Effect.catchAll((e) => fatal(CMD, `cannot read --pcrs ${value}: ${e.message}`)))
    const text = new TextDecoder().decode(bytes)
    if (text.trimStart().startsWith("{")) return pcrsFromJson(text)
    return Either.mapBoth(parsePcrBlob(bytes), { onLeft: (e) => `--pcrs ${value} is neither JSON nor a tpm2-tools PCR file: ${e.message}`, onRight: (b) => b.values })
  })

export const run = (args: {
  readonly refstate: string
  readonly eventlog: string
  readonly pcrs: Option.Option<string>
  readonly policy: string
}) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const text = yield* fs.readFileString(args.refstate).pipe(Effect.catchAll((e) => fatal(CMD, `cannot read reference state ${args.refstate}: ${e.message}`)))
    const ref = Schema.decodeUnknownEither(Schema.parseJson())(text)
    if (Either.isLeft(ref)) return yield* fatal(CMD, `${args.refstate} is not JSON`)
    const log = yield* readEventLogFile(CMD, args.eventlog)
    const replayed = replayPcrs(log)
    let quoted: PcrValues = replayed
    if (Option.isSome(args.pcrs)) {
      const r = yield* readPcrs(args.pcrs.value)
      if (Either.isLeft(r)) return yield* fatal(CMD, r.left)
      quoted = r.right
    }
    const input = { log, quotedPcrs: quoted, refstate: ref.right }
    const result = yield* evaluateMeasuredBootNamed(input, args.policy).pipe(
      Effect.catchTag("UnknownMbPolicyError", (e) => fatal(CMD, e.message)),
      Effect.provide(MbPolicyRegistry.Default)
    )
    const summary = `${log.events.length} events, policy '${args.policy}'${Option.isSome(args.pcrs) ? ", PCRs compared with --pcrs" : ""}`
    if (result.failures.length === 0) return yield* Console.log(`PASS ${args.eventlog}: ${summary}`)
    for (const f of result.failures) {
      const { message, ...rest } = f.context
      const detail = typeof rest["reason"] === "string" ? rest["reason"] : Object.entries(rest).map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(" ")
      yield* Console.log(`FAIL ${f.type}: ${message}${detail ? `: ${detail}` : ""}`)
    }
    return yield* fatal(CMD, `${args.eventlog} fails (${result.failures.length} failure${result.failures.length > 1 ? "s" : ""}; ${summary})`)
  })
