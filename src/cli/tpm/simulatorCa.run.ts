/** `attest tpm simulator-ca` (implementation, loaded when the command runs). */
import { FileSystem } from "@effect/platform"
import { Console, Effect, Option } from "effect"
import { simulatorManufacturerCa } from "../../tpm/simulator/TpmSimulator.js"
import { TpmCommandError } from "./errors.js"

export const run = (args: { readonly out: Option.Option<string> }) =>
  Effect.gen(function*() {
    const pem = simulatorManufacturerCa().pem
    if (Option.isNone(args.out)) return yield* Console.log(pem.trimEnd())
    const file = args.out.value
    const fs = yield* FileSystem.FileSystem
    yield* fs.writeFileString(file, pem, { mode: 0o644 }).pipe(
      Effect.mapError((e) => new TpmCommandError({ reason: "--out", message: `cannot write ${file}: ${e.message}` })),
      Effect.tapError((e) => Console.error(`attest tpm simulator-ca: ${e.message}`))
    )
    yield* Console.log(`wrote the simulated TPM manufacturer CA to ${file}`)
  })
