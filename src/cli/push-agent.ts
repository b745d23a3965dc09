/**
 * `attest push-agent [--config file] [--tpm tpm2-tools|simulator] [--tcti …] [--measurements system|simulated]`:
 * the push-model agent on the options of the `[agent]` section (verifier_url, verifier_tls_ca_cert,
 * attestation_interval_seconds, exponential_backoff_*). It listens on no port.
 */
import { Command, Options } from "@effect/cli"
import { configFileOption } from "./config.js"
import { lazy } from "./lazy.js"

export const pushAgentCommand = Command.make(
  "push-agent",
  {
    config: configFileOption,
    tpm: Options.choice("tpm", ["tpm2-tools", "simulator"]).pipe(
      Options.withDescription("TPM to use: a real TPM (or swtpm) through tpm2-tools, or the in-memory simulator"),
      Options.withDefault("tpm2-tools" as const)
    ),
    tcti: Options.text("tcti").pipe(
      Options.withDescription("tpm2-tools TCTI, e.g. device:/dev/tpmrm0 or swtpm:host=127.0.0.1,port=2321"),
      Options.optional
    ),
    measurements: Options.choice("measurements", ["system", "simulated"]).pipe(
      Options.withDescription("IMA list and boot log: this machine's securityfs files, or a simulated machine extended into the TPM"),
      Options.optional
    )
  },
  lazy(() => import("./push-agent.run.js"), (m) => m.run)
).pipe(
  Command.withDescription(
    "Run the push-model agent (API 3.0): register with the registrar, then open a PoP session with the verifier and push evidence every attestation interval. Listens on no port."
  )
)
