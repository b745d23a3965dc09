/**
 * `attest up` enrols its push agents as an operator does, with the tenant's `add --push` (Keylime's
 * `--push-model`, src/tenant/add.ts `addPush`): once the agent has registered and activated, its EK
 * certificate is checked and it is added at the verifier as a push agent with a runtime policy from
 * its machine's IMA list and a reference state from its boot log. An agent the verifier already
 * holds (a restart) is left as it is.
 */
import { Duration, Effect, Option } from "effect"
import { addPush } from "../../tenant/add.js"
import { verifierStatus } from "../../tenant/agentCommands.js"
import type { Connections } from "../../tenant/connect.js"
import { addOptionsFor, quiet } from "./enrol.js"
import { writeMachinePolicies } from "./policies.js"
import type { UpPushAgent } from "./pushAgents.js"

/** How long an agent may take to register and activate before its enrolment is given up. */
const REGISTRATION_WAIT = Duration.seconds(120)

const enrolOne = (c: Connections, a: UpPushAgent, say: (line: string) => Effect.Effect<void>) =>
  Effect.gen(function*() {
    const known = yield* verifierStatus(c, a.agentId).pipe(Effect.option)
    if (Option.isSome(known)) {
      yield* say(`agent ${a.n}  ${a.agentId}  push, already at the verifier (${"attestation_status" in known.value ? known.value.attestation_status : "status unknown"}): resumed`)
      return
    }
    const files = yield* writeMachinePolicies(a.source, a.dir)
    yield* addPush(c, quiet, { ...addOptionsFor(a.agentId, files), verify: false }, { waitForRegistration: REGISTRATION_WAIT })
    yield* say(`agent ${a.n}  ${a.agentId}  push, enrolled at the verifier (runtime policy from its IMA list, reference state from its boot log)`)
  })

/** Enrols every push agent the verifier does not hold yet; gives how many are there. */
export const enrolPush = (c: Connections, agents: ReadonlyArray<UpPushAgent>, say: (line: string) => Effect.Effect<void>) =>
  Effect.forEach(
    agents,
    (a) =>
      enrolOne(c, a, say).pipe(
        Effect.as(true),
        Effect.catchAll((e) => Effect.as(say(`agent ${a.n}  ${a.agentId}  push, not enrolled: ${e.message}`), false))
      ),
    { concurrency: "unbounded" }
  ).pipe(Effect.map((ok) => ok.filter((x) => x).length))
