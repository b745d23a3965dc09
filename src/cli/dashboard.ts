/**
 * `attest dashboard [--port n] [--verifier url] [--registrar url] [--config file]`: the web
 * dashboard on 127.0.0.1, reading the verifier and the registrar with the `[tenant]` admin
 * credentials (src/dashboard/).
 */
import { Command, Options } from "@effect/cli"
import { configFileOption } from "./config.js"
import { lazy } from "./lazy.js"

export const dashboardCommand = Command.make(
  "dashboard",
  {
    config: configFileOption,
    port: Options.integer("port").pipe(
      Options.withDescription("port on 127.0.0.1 (default: 8443, or the next free one; 0: any free port)"),
      Options.optional
    ),
    verifier: Options.text("verifier").pipe(
      Options.withDescription("verifier https://host:port (default: [tenant] verifier_ip and verifier_port)"),
      Options.optional
    ),
    registrar: Options.text("registrar").pipe(
      Options.withDescription("registrar admin https://host:port (default: [tenant] registrar_ip and registrar_port)"),
      Options.optional
    ),
    interval: Options.integer("interval").pipe(
      Options.withDescription("seconds between reads of the verifier (longer on a large fleet: at least 4 times as long as the verifier took to answer, so the dashboard never takes more than a fifth of its time)"),
      Options.withDefault(2)
    )
  },
  lazy(() => import("./dashboard.run.js"), (m) => m.run)
).pipe(
  Command.withDescription(
    "Serve the web dashboard on 127.0.0.1 (fleet, agents, policies, registrar; live): it reads the verifier and the registrar with the [tenant] admin certificate, so the browser needs none."
  )
)
