/**
 * The policies `attest up` enrols a simulated machine with, made the way an operator makes them
 * with `attest policy create`: a runtime policy allowing what the machine's IMA list shows at start,
 * and a measured-boot reference state from its boot log. Written beside the agent's state so a
 * restart (and an operator) sees what was enrolled.
 */
import { Data, Effect, Either, Option } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { Generator, makeRuntimePolicy } from "../../../schemas/RuntimePolicy.js"
import type { MeasurementSourceShape } from "../../agent/measurements/MeasurementSource.js"
import { createRefState } from "../../boot/createRefState.js"
import { parseEventLog } from "../../boot/eventLog.js"
import { digestsFromImaList } from "../../ima/digestsFromList.js"
import { parseList } from "../../ima/entry.js"

export interface MachinePolicyFiles {
  readonly runtimePolicy: string
  readonly mbRefstate: string
}

/** A machine whose lists cannot make policies; the message names the machine and the step. */
export class UpPolicyError extends Data.TaggedError("UpPolicyError")<{ readonly message: string }> {}

export const writeMachinePolicies = (source: MeasurementSourceShape, dir: string): Effect.Effect<MachinePolicyFiles, UpPolicyError> =>
  Effect.gen(function*() {
    const fail = (what: string) => (e: { readonly message: string }) => new UpPolicyError({ message: `${source.description}: ${what}: ${e.message}` })
    const slice = yield* source.imaList(0).pipe(Effect.mapError(fail("IMA list")))
    const entries = parseList(Option.isNone(slice) ? "" : slice.value.list)
    if (Either.isLeft(entries)) return yield* Effect.fail(fail("IMA list")(entries.left))
    const runtime = makeRuntimePolicy({ digests: digestsFromImaList(entries.right), generator: Generator.LegacyAllowList })

    const logBytes = yield* source.bootLog.pipe(Effect.mapError(fail("boot log")))
    if (Option.isNone(logBytes)) return yield* Effect.fail(new UpPolicyError({ message: `${source.description}: no boot log` }))
    const log = parseEventLog(logBytes.value)
    if (Either.isLeft(log)) return yield* Effect.fail(fail("boot log")(log.left))
    const refstate = createRefState(log.right)
    if (Either.isLeft(refstate)) return yield* Effect.fail(fail("reference state")(refstate.left))

    const files: MachinePolicyFiles = { runtimePolicy: path.join(dir, "runtime-policy.json"), mbRefstate: path.join(dir, "mb-refstate.json") }
    yield* Effect.try({
      try: () => {
        fs.writeFileSync(files.runtimePolicy, JSON.stringify(runtime), { mode: 0o600 })
        fs.writeFileSync(files.mbRefstate, JSON.stringify(refstate.right.refstate), { mode: 0o600 })
      },
      catch: (e) => new UpPolicyError({ message: `cannot write the policies of ${source.description} in ${dir}: ${e instanceof Error ? e.message : String(e)}` })
    })
    return files
  })
