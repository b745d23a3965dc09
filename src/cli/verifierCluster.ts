/** `attest verifier cluster status`: the runners of cluster mode, their agents and the oldest verified quote. */
import { Command, Options } from "@effect/cli"
import { configFileOption } from "./config.js"
import { lazy } from "./lazy.js"

const statusCommand = Command.make(
  "status",
  {
    config: configFileOption,
    json: Options.boolean("json").pipe(Options.withDescription("print the status as JSON (for scripts)"))
  },
  lazy(() => import("./verifierCluster.run.js"), (m) => m.status)
).pipe(
  Command.withDescription(
    "Read the [verifier] section's PostgreSQL database: each runner (@effect/cluster's registry: healthy, unhealthy, or gone while it still owns agents), " +
      "how many active pull agents its loops took, and the oldest verified quote among them and among all. Exit 0 when read, 1 when the database cannot be."
  )
)

export const clusterCommand = Command.make("cluster").pipe(
  Command.withDescription("Cluster mode of the verifier ([verifier] cluster = true): several runners on one PostgreSQL database."),
  Command.withSubcommands([statusCommand])
)
