/** Options every `attest tenant` command takes (cheap: no implementation code). */
import { Options } from "@effect/cli"
import { configFileOption } from "../config.js"

export const common = {
  config: configFileOption,
  verifier: Options.text("verifier").pipe(
    Options.withDescription("verifier address https://host:port (default: [tenant] verifier_ip and verifier_port)"),
    Options.optional
  ),
  registrar: Options.text("registrar").pipe(
    Options.withDescription("registrar admin address https://host:port (default: [tenant] registrar_ip and registrar_port)"),
    Options.optional
  ),
  json: Options.boolean("json").pipe(Options.withDescription("print the result as JSON (for scripts)"))
}

export const uuid = Options.text("uuid").pipe(Options.withDescription("the agent's id"))
