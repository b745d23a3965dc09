/**
 * `attest verifier [--config file]`: the verifier on the options of the `[verifier]` section;
 * `attest verifier cluster status`: its cluster mode's runners (verifierCluster.ts).
 */
import { Command } from "@effect/cli"
import { configFileOption } from "./config.js"
import { lazy } from "./lazy.js"
import { clusterCommand } from "./verifierCluster.js"

export const verifierCommand = Command.make(
  "verifier",
  { config: configFileOption },
  lazy(() => import("./verifier.run.js"), (m) => m.run)
).pipe(
  Command.withDescription(
    "Run the verifier: admins add agents and policies on the HTTPS port (8881, mTLS); verify/identity and verify/evidence are public there."
  ),
  Command.withSubcommands([clusterCommand])
)
