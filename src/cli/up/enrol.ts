/**
 * `attest up` enrols its agents through the tenant's own `add` (the same code as `attest tenant add
 * --verify`): an agent the verifier already holds at the same address (a restart) is left to the
 * verifier, which resumes it; one that now listens elsewhere (`--agent-port 0`) is enrolled again
 * as `attest tenant update` does; a new one gets policies made from its machine and is added, V
 * delivery verified.
 */
import { Effect, Option } from "effect"
import type { RunningAgentShape } from "../../agent/Agent.js"
import type { MeasurementSourceShape } from "../../agent/measurements/MeasurementSource.js"
import type { SimulatedMachineShape } from "../../agent/measurements/SimulatedMachine.js"
import { add, type AddOptions, update } from "../../tenant/add.js"
import { verifierStatus } from "../../tenant/agentCommands.js"
import { stateLabel } from "../../tenant/agentStatus.js"
import type { Connections } from "../../tenant/connect.js"
import type { Output } from "../../tenant/run.js"
import { type MachinePolicyFiles, writeMachinePolicies } from "./policies.js"

export interface UpAgent {
  /** The agent's number in `attest up` (1-based). */
  readonly n: number
  readonly dir: string
  readonly agent: RunningAgentShape
  readonly machine: SimulatedMachineShape
  readonly source: MeasurementSourceShape
}

/** The tenant's progress lines go to the log (info), not to up's summary. */
export const quiet: Output = {
  json: false,
  show: () => Effect.void,
  note: (line) => Effect.logInfo(line)
}

/** `attest tenant add --verify` for an agent with the policies made from its machine. */
export const addOptionsFor = (agentId: string, files: MachinePolicyFiles): AddOptions => ({
  agentId,
  ip: Option.none(),
  port: Option.none(),
  runtimePolicy: Option.some(files.runtimePolicy),
  runtimePolicyName: Option.none(),
  mbRefstate: Option.some(files.mbRefstate),
  mbPolicyName: Option.none(),
  tpmPolicy: Option.none(),
  payload: Option.none(),
  cert: Option.none(),
  include: [],
  revocationKey: Option.none(),
  verify: true
})

/** Enrols every agent the verifier does not hold yet; gives how many are at the verifier. */
export const enrol = (c: Connections, agents: ReadonlyArray<UpAgent>, say: (line: string) => Effect.Effect<void>) =>
  Effect.forEach(
    agents,
    (a) =>
      Effect.gen(function*() {
        const id = a.agent.agentId
        const known = yield* verifierStatus(c, id).pipe(Effect.option)
        const port = new URL(a.agent.url).port
        if (Option.isSome(known) && String(known.value.port) === port) {
          yield* say(`agent ${a.n}  ${id}  already at the verifier (${stateLabel(known.value.operational_state)}): resumed`)
          return true
        }
        const files = yield* writeMachinePolicies(a.source, a.dir)
        const options = addOptionsFor(id, files)
        if (Option.isSome(known)) {
          yield* update(c, quiet, options)
          yield* say(`agent ${a.n}  ${id}  listens on a new port (${known.value.port} → ${port}): enrolled again`)
          return true
        }
        yield* add(c, quiet, options)
        yield* say(`agent ${a.n}  ${id}  enrolled (runtime policy from its IMA list, reference state from its boot log; V delivered)`)
        return true
      }).pipe(
        Effect.scoped,
        Effect.catchAll((e) => Effect.as(say(`agent ${a.n}  ${a.agent.agentId}  not enrolled: ${e.message}`), false))
      ),
    { concurrency: "unbounded" }
  ).pipe(Effect.map((ok) => ok.filter((x) => x).length))
