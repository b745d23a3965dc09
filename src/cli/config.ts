/**
 * `attest config show <component>`: every effective option and where it came from;
 * `attest config import <file>…`: an existing Keylime installation's configuration as attest's TOML.
 */
import { Args, Command, Options } from "@effect/cli"
import { sectionNames } from "../config/sections.js"
import { lazy } from "./lazy.js"

/** The shared `--config <file>` option of every component command. */
export const configFileOption = Options.file("config", { exists: "yes" }).pipe(
  Options.withDescription("TOML file with [verifier], [registrar], [tenant] and [agent] sections"),
  Options.optional
)

const showCommand = Command.make(
  "show",
  { component: Args.choice(sectionNames.map((n) => [n, n] as const), { name: "component" }), config: configFileOption },
  lazy(() => import("./config.run.js"), (m) => m.show)
).pipe(Command.withDescription("Print the effective configuration of a component: each value and its source (default, file, env)."))

export const configCommand = Command.make("config").pipe(
  Command.withDescription("Inspect configuration: environment ATTEST_<SECTION>_<OPTION> over the --config TOML file over defaults."),
  Command.withSubcommands([showCommand])
)
