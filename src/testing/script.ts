/**
 * A fleet's scripted history: what happens to which agent, or to the database, at which moment of
 * simulated time. Each event is a fiber that sleeps (TestClock) until its moment and then acts on
 * the simulated parts: the machine measures a file into its TPM as the kernel would, the agent's
 * network stops answering (and comes back), the verifier's database stops answering (and comes
 * back). Agents are named by their number in the fleet, from 1.
 *
 *   [runsBinary(3, "7 minutes", "/usr/local/bin/miner"), databaseDown("9 minutes", "10 minutes"), networkDown(5, "12 minutes")]
 */
import { Duration, Effect } from "effect"
import type { DatabaseSwitchShape } from "./databaseSwitch.js"
import type { SimulatedAgent } from "./simulatedAgent.js"

export type FleetEvent =
  | {
    readonly _tag: "RunsBinary"
    readonly agent: number
    readonly at: Duration.Duration
    readonly path: string
    /** The file's content: its digest is what IMA measures (none of the policy's). */
    readonly content: string
  }
  | { readonly _tag: "NetworkDown"; readonly agent: number; readonly from: Duration.Duration; readonly to: Duration.Duration | undefined }
  | { readonly _tag: "DatabaseDown"; readonly from: Duration.Duration; readonly to: Duration.Duration }

/** Agent `agent` executes a file the runtime policy does not know, at `at`. */
export const runsBinary = (agent: number, at: Duration.DurationInput, path = "/usr/local/bin/unknown", content = `unknown binary ${path}`): FleetEvent => ({
  _tag: "RunsBinary",
  agent,
  at: Duration.decode(at),
  path,
  content
})

/** Agent `agent`'s network drops at `from` (and returns at `to`, when given): no request to or from it is answered. */
export const networkDown = (agent: number, from: Duration.DurationInput, to?: Duration.DurationInput): FleetEvent => ({
  _tag: "NetworkDown",
  agent,
  from: Duration.decode(from),
  to: to === undefined ? undefined : Duration.decode(to)
})

/** The verifier's database is unreachable from `from` to `to`. */
export const databaseDown = (from: Duration.DurationInput, to: Duration.DurationInput): FleetEvent => ({
  _tag: "DatabaseDown",
  from: Duration.decode(from),
  to: Duration.decode(to)
})

/** An event that names no agent of the fleet or runs backwards in time. */
export const eventProblem = (e: FleetEvent, agents: number): string | undefined => {
  if (e._tag !== "DatabaseDown" && (!Number.isInteger(e.agent) || e.agent < 1 || e.agent > agents)) {
    return `${e._tag}: agent ${e.agent} is not in the fleet (1 to ${agents})`
  }
  if (e._tag === "DatabaseDown" && Duration.lessThanOrEqualTo(e.to, e.from)) return "DatabaseDown: it must come back after it went"
  if (e._tag === "NetworkDown" && e.to !== undefined && Duration.lessThanOrEqualTo(e.to, e.from)) return "NetworkDown: it must come back after it went"
  return undefined
}

/** The fiber of one event: waits for its moment (from the fleet's start), then acts. */
export const playEvent = (e: FleetEvent, agentOf: (n: number) => SimulatedAgent, database: DatabaseSwitchShape) => {
  switch (e._tag) {
    case "RunsBinary":
      return Effect.zipRight(Effect.sleep(e.at), Effect.orDie(agentOf(e.agent).machine.measure(e.path, e.content)))
    case "NetworkDown": {
      const network = agentOf(e.agent).network
      const down = Effect.zipRight(Effect.sleep(e.from), Effect.sync(() => void (network.down = true)))
      return e.to === undefined ? down : Effect.zipRight(down, Effect.zipRight(Effect.sleep(Duration.subtract(e.to, e.from)), Effect.sync(() => void (network.down = false))))
    }
    case "DatabaseDown":
      return Effect.sleep(e.from).pipe(
        Effect.zipRight(database.cut),
        Effect.zipRight(Effect.sleep(Duration.subtract(e.to, e.from))),
        Effect.zipRight(database.restore)
      )
  }
}
