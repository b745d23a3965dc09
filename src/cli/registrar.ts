/** `attest registrar [--config file]`: the registrar on the options of the `[registrar]` section. */
import { Command } from "@effect/cli"
import { configFileOption } from "./config.js"
import { lazy } from "./lazy.js"

export const registrarCommand = Command.make(
  "registrar",
  { config: configFileOption },
  lazy(() => import("./registrar.run.js"), (m) => m.run)
).pipe(
  Command.withDescription(
    "Run the registrar: agents register and activate on the HTTP port (8890), admins list, show and delete on the HTTPS port (8891)."
  )
)
