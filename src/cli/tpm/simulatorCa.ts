/**
 * `attest tpm simulator-ca [--out file]`: the simulated TPMs' manufacturer CA certificate (PEM),
 * to stdout or a file. A tenant's EK trust store (and Keylime's `tpm_cert_store`) needs it to
 * accept the EK certificates of attest's simulated TPMs; `attest up` writes it into its data
 * directory too.
 */
import { Command, Options } from "@effect/cli"
import { FileSystem } from "@effect/platform"
import { Console, Effect, Option } from "effect"
import { simulatorManufacturerCa } from "../../../layers/TpmSimulator.js"
import { TpmCommandError } from "./errors.js"

const out = Options.file("out").pipe(
  Options.optional,
  Options.withDescription("Write the PEM to this file (0644) instead of printing it.")
)

export const simulatorCaCommand = Command.make("simulator-ca", { out }, (args) =>
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
).pipe(
  Command.withDescription(
    "Print (or --out write) the manufacturer CA certificate (PEM) of attest's simulated TPMs, for EK trust stores (tpm_cert_store, ek_ca_dir)."
  )
)
