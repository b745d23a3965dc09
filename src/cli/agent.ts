/**
 * `attest agent [--config file] [--tpm tpm2-tools|simulator] [--tcti …] [--measurements system|simulated]`:
 * the pull agent on the options of the `[agent]` section. A real TPM through tpm2-tools and this
 * machine's securityfs measurements by default; the simulator (with a simulated machine) only when
 * asked, and then it says so loudly, naming what is simulated (the TPM, the measurements, or both).
 */
import { Command, Options } from "@effect/cli"
import { configFileOption } from "./config.js"
import { lazy } from "./lazy.js"

/** The options both agents take: config file, TPM (tpm2-tools or simulator), TCTI, measurements. */
export const agentOptions = {
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
}

export const agentCommand = Command.make(
  "agent",
  agentOptions,
  lazy(() => import("./agent.run.js"), (m) => m.run)
).pipe(Command.withDescription("Run the pull-model agent: register with the registrar, then answer quote and key requests over HTTPS (port 9002)."))
