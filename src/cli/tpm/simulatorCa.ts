/**
 * `attest tpm simulator-ca [--out file]`: the simulated TPMs' manufacturer CA certificate (PEM),
 * to stdout or a file. A tenant's EK trust store (and Keylime's `tpm_cert_store`) needs it to
 * accept the EK certificates of attest's simulated TPMs; `attest up` writes it into its data
 * directory too.
 */
import { Command, Options } from "@effect/cli"
import { lazy } from "../lazy.js"

const out = Options.file("out").pipe(
  Options.optional,
  Options.withDescription("Write the PEM to this file (0644) instead of printing it.")
)

export const simulatorCaCommand = Command.make("simulator-ca", { out }, lazy(() => import("./simulatorCa.run.js"), (m) => m.run)).pipe(
  Command.withDescription(
    "Print (or --out write) the manufacturer CA certificate (PEM) of attest's simulated TPMs, for EK trust stores (tpm_cert_store, ek_ca_dir)."
  )
)
