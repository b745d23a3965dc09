/**
 * `attest push-agent [--config file] [--tpm tpm2-tools|simulator] [--tcti …] [--measurements system|simulated]`:
 * the push-model agent on the options of the `[agent]` section (verifier_url, verifier_tls_ca_cert,
 * attestation_interval_seconds, exponential_backoff_*). It listens on no port.
 */
import { Command } from "@effect/cli"
import { agentOptions } from "./agent.js"
import { lazy } from "./lazy.js"

export const pushAgentCommand = Command.make(
  "push-agent",
  agentOptions,
  lazy(() => import("./push-agent.run.js"), (m) => m.run)
).pipe(
  Command.withDescription(
    "Run the push-model agent (API 3.0): register with the registrar, then open a PoP session with the verifier and push evidence every attestation interval. Listens on no port."
  )
)
