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

const importCommand = Command.make(
  "import",
  {
    files: Args.file({ name: "file", exists: "yes" }).pipe(
      Args.withDescription("Keylime configuration files, later ones overriding earlier ones: verifier.conf, registrar.conf, tenant.conf, ca.conf, their .conf.d snippets, the Rust agent's agent.conf (or keylime-agent.conf); the files Keylime installs, not its Jinja2 templates"),
      Args.atLeast(1)
    ),
    out: Options.file("out").pipe(Options.withDescription("write attest's TOML here instead of standard output"), Options.optional),
    keylimeDir: Options.directory("keylime-dir").pipe(
      Options.withDescription("Keylime's working directory (its KEYLIME_DIR): where its CA (cv_ca) and tpm_cert_store are, base of relative paths"),
      Options.withDefault("/var/lib/keylime")
    ),
    force: Options.boolean("force").pipe(Options.withDescription("replace the --out file if it exists"))
  },
  lazy(() => import("./configImport.run.js"), (m) => m.run)
).pipe(Command.withDescription(
  "Write attest's TOML from an existing Keylime installation's configuration files, listing on stderr every option not carried over and why."
))

export const configCommand = Command.make("config").pipe(
  Command.withDescription("Inspect configuration (environment ATTEST_<SECTION>_<OPTION> over the --config TOML file over defaults), or import Keylime's."),
  Command.withSubcommands([showCommand, importCommand])
)
