/**
 * `attest up --verifiers N` (issue 24): N verifier runners in cluster mode (`[verifier] cluster =
 * true`) in up's process, sharing the PostgreSQL database of `--database-url`, a demonstration of
 * how the pull agents are shared out and who polls each (the live table's runner column, the
 * dashboard's fleet page). Refused, naming the setting, on SQLite: one process's database cannot be
 * shared by runners. Each runner gets its own HTTPS port (the first keeps --verifier-port) and
 * cluster port (a free one on the reach address); the tenant and the dashboard use the first.
 */
import * as net from "node:net"
import { Effect } from "effect"
import { chooseBackend, DatabaseConfigError } from "../../db/Sql.js"
import { UsageError } from "../../config/usageError.js"

/** The verifier runners `--verifiers` asks for, or the usage error that refuses them. */
export const checkVerifiers = (o: { readonly verifiers: number; readonly databaseUrl: string }): Effect.Effect<number, UsageError> => {
  if (!Number.isInteger(o.verifiers) || o.verifiers < 1) {
    return Effect.fail(new UsageError({ message: `--verifiers ${o.verifiers}: must be a number of verifier runners, 1 or more` }))
  }
  const backend = chooseBackend({ database_url: o.databaseUrl, data_dir: "" }, "verifier")
  if (backend instanceof DatabaseConfigError) return Effect.fail(new UsageError({ message: `--database-url: ${backend.message}` }))
  if (o.verifiers > 1 && backend._tag !== "pg") {
    return Effect.fail(
      new UsageError({
        message: `--verifiers ${o.verifiers} runs the verifier in cluster mode ([verifier] cluster = true), whose runners share one PostgreSQL database: ` +
          `give --database-url postgres://…; SQLite (the default, or a sqlite: --database-url) is one process's database`
      })
    )
  }
  return Effect.succeed(o.verifiers)
}

/** A port free on `host` now (the engine needs the real port up front: 0 cannot name a runner). */
export const freePort = (host: string): Effect.Effect<number, Error> =>
  Effect.async<number, Error>((resume) => {
    const server = net.createServer()
    server.once("error", (e) => resume(Effect.fail(new Error(`no free cluster port on ${host}: ${e.message}`))))
    server.listen(0, host, () => {
      const port = (server.address() as net.AddressInfo).port
      server.close(() => resume(Effect.succeed(port)))
    })
  })
