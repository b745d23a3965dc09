/**
 * attest/testing: deterministic fleet runs. A registrar, a verifier and N simulated agents (pull
 * and push) run inside one Effect program on a TestClock, with seeded simulated TPMs and machines
 * and in-memory SQLite, so a test can script a fleet's history and get the same verdicts, in the
 * same order, byte for byte, on every run (Node only):
 *
 *   import { databaseDown, networkDown, runFleet, runsBinary } from "attest/testing"
 *
 *   const run = await Effect.runPromise(runFleet({
 *     seed: "fleet-1",
 *     agents: 50,
 *     duration: "60 minutes",
 *     script: [
 *       runsBinary(3, "7 minutes", "/usr/local/bin/miner"),  // agent 3 runs an unknown binary
 *       databaseDown("9 minutes", "10 minutes"),              // the verifier's database is unreachable
 *       networkDown(5, "12 minutes")                          // agent 5's network drops
 *     ]
 *   }))
 *   run.text   // "00:00:00 agent-01 pull pass state=Get Quote\n…"
 *
 * No sockets: the verifier asks pull agents through an in-process AgentClient that serves the
 * agent's own request app, push agents call the verifier's push services directly with the push
 * agent's evidence, and the registrar is its domain service. The fleet's clock (fleetClock.ts)
 * moves only when every fiber of the fleet waits, so nothing depends on how fast the machine is.
 */
export { databaseDown, type FleetEvent, networkDown, runsBinary } from "./script.js"
export { agentIdOf, FLEET_VERIFIER_DEFAULTS, type FleetOptions, type FleetRun, runFleet } from "./fleet.js"
export { FleetSetupError } from "./simulatedAgent.js"
export { FLEET_EPOCH_MS } from "./fleetClock.js"
export { clockText, lineText, type VerdictLine } from "./verdictLog.js"
export { DatabaseSwitch, SwitchedDatabase, unreachableDatabase } from "./databaseSwitch.js"
