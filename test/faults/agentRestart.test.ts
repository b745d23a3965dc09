/**
 * A pull agent restarted WITHOUT a reboot: `attest agent --tpm tpm2-tools` on a swtpm process and
 * an IMA measurement list file that both outlive it, as on a real machine whose agent service
 * restarts (same TPM: PCRs and resetCount unchanged; same list, still growing). The agent is
 * killed with SIGKILL at a seeded point of its cycle (ATTEST_FAULT_SEED replays it); while it is
 * down the machine measures a new file (line appended, PCR 10 extended); it is restarted on the
 * same swtpm and file.
 *
 * - Round 1, the new file is in the runtime policy: GET_QUOTE_RETRY (4) while it is down, GET_QUOTE
 *   (3) and a new verdict once it answers, never FAILED; the verifier's stored IMA progress moves
 *   from the entry it had reached to exactly the next one (the list continued, not read again from
 *   entry 0: no "agent rebooted" line), on the same TPM reset count.
 * - Round 2, the new file is not in the policy: the agent fails with the IMA failure (the entries
 *   added across a restart are really judged), and still no reboot was seen.
 *
 * SQLite only: what this tests is the agent process and the verifier's IMA progress across it, not
 * the database (the verifier's own restart on both backends is test/verifier/poller.restart.test.ts).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import { decodeEvaluationState } from "../../src/attestation/evaluate/state.js"
import { needsSwtpm } from "../support/requirements.js"
import { machinePolicyBase64 } from "../verifier/pollerSupport.js"
import { activeRecord, pullAgentReady, pullEnrolment, startComponent, writePullAgentConfig } from "./components.js"
import { faultSeed, seededRandom } from "./support.js"
import { swtpmFleet } from "./swtpmFleet.js"

const QUOTE_INTERVAL = 2
const PULL = "d432fbb3-d2f1-4a97-9ef7-75bd81c0de11"
const STATE = { GET_QUOTE: 3, GET_QUOTE_RETRY: 4, FAILED: 7, INVALID_QUOTE: 9 } as const
/** Measured while the agent is down: allowed by the policy, then not. */
const NEW_TOOL = { path: "/usr/bin/new-tool", content: "new tool 1.0" }
const EVIL = { path: "/usr/bin/evil", content: "not in any policy" }
const sleep = (ms: number) => Effect.promise(() => new Promise((r) => setTimeout(r, ms)))

describe("a pull agent restarted without a reboot (swtpm and IMA list file outlive it)", () => {
  it.live.skipIf(!needsSwtpm())("resumes its IMA list at the next entry, judges the entries added meanwhile, never FAILED for the restart", () =>
    Effect.gen(function*() {
      const seed = faultSeed()
      const random = seededRandom(seed)
      const startedAt = Date.now()
      // shown when the test fails (ATTEST_FAULT_SEED=<seed> replays the kill points)
      yield* Effect.logInfo(`agent restart without reboot: seed ${seed}`)
      const fleet = yield* swtpmFleet(QUOTE_INTERVAL)
      const fleetAt = Date.now()
      const { admin, ca, ima, verifierUrl } = fleet
      const agentConfig = writePullAgentConfig(fleet.dir, { id: PULL, ca, port: fleet.agentPort, registrarPort: fleet.registrarPort, extra: fleet.machineLines })
      const agentArgs = ["agent", "--config", agentConfig, ...fleet.tpmArgs]
      let agent = yield* startComponent(agentArgs, pullAgentReady(PULL))

      // the tenant: the agent's record from the registrar, enrolled with a policy that allows NEW_TOOL
      const record = yield* activeRecord(ca, fleet.registrarTlsPort, PULL)
      const added = yield* admin(verifierUrl, "POST", `/v2.6/agents/${PULL}`, { ...pullEnrolment(record), runtime_policy: machinePolicyBase64([NEW_TOOL]) })
      expect({ status: added.status, body: added.status === 200 ? "" : added.body }).toEqual({ status: 200, body: "" })

      // the agent's status sampled every 200 ms; the verifier's stored progress read from its database
      const { samples, waitFor } = yield* fleet.watch(PULL)
      const progress = Effect.gen(function*() {
        const [row] = yield* Effect.orDie(fleet.sql<{ evaluation_state: string | null; attestation_count: number }>`SELECT evaluation_state, attestation_count FROM verifier_agents WHERE agent_id = ${PULL}`)
        const state = Either.getOrThrow(decodeEvaluationState(row!.evaluation_state!))
        return { nextEntry: state.ima.nextEntry, resetCount: state.clock?.resetCount, count: Number(row!.attestation_count) }
      })

      yield* waitFor("the agent attested", (s) => s.operational_state === STATE.GET_QUOTE && s.attestation_count >= 1)
      const first = yield* progress
      expect({ seed, nextEntry: first.nextEntry }).toEqual({ seed, nextEntry: ima.entries() })

      /** Killed at a seeded point of its cycle; `file` measured while it is down; restarted on the same swtpm and list. */
      const killMeasureRestart = (round: number, file: { readonly path: string; readonly content: string }) =>
        Effect.gen(function*() {
          const tag = { seed, round }
          yield* sleep(random() * QUOTE_INTERVAL * 1000)
          const killedAt = Date.now()
          agent.run.child.kill("SIGKILL")
          expect({ ...tag, exit: yield* Effect.promise(() => agent.run.exited) }).toEqual({ ...tag, exit: null })
          const atKill = yield* progress
          const retrying = yield* waitFor(`GET_QUOTE_RETRY after kill ${round} (seed ${seed})`, (s) => s.operational_state === STATE.GET_QUOTE_RETRY)
          yield* Effect.promise(() => ima.measure(file.path, file.content))
          agent = yield* startComponent(agentArgs, pullAgentReady(PULL))
          return { tag, killedAt, atKill, retrying }
        })

      // round 1: the entry added while it was down is allowed
      const one = yield* killMeasureRestart(1, NEW_TOOL)
      const back = yield* waitFor(
        `GET_QUOTE and a new verdict after restart 1 (seed ${seed})`,
        (s) => s.operational_state === STATE.GET_QUOTE && s.attestation_count > one.retrying.attestation_count
      )
      const backAt = Date.now()
      const resumed = yield* progress
      expect({ ...one.tag, nextEntry: resumed.nextEntry, resetCount: resumed.resetCount, reboots: fleet.reboots(), counted: resumed.count > one.atKill.count })
        .toEqual({ ...one.tag, nextEntry: one.atKill.nextEntry + 1, resetCount: first.resetCount, reboots: 0, counted: true })
      const states = [...new Set(samples.filter((s) => s.at >= one.killedAt).map((s) => s.status.operational_state))].sort()
      expect({ ...one.tag, states }).toEqual({ ...one.tag, states: [STATE.GET_QUOTE, STATE.GET_QUOTE_RETRY] })
      yield* Effect.logInfo(
        `agent restart without reboot (seed ${seed}): IMA resumed at entry ${one.atKill.nextEntry} -> ${resumed.nextEntry}; ` +
          `kill to GET_QUOTE ${backAt - one.killedAt} ms; attestations ${one.atKill.count} -> ${back.attestation_count}`
      )

      // round 2: the entry added while it was down is not allowed: judged, and the agent fails for it
      const two = yield* killMeasureRestart(2, EVIL)
      const failed = yield* waitFor(`the IMA failure after restart 2 (seed ${seed})`, (s) => s.operational_state === STATE.FAILED || s.operational_state === STATE.INVALID_QUOTE)
      expect({ ...two.tag, event: failed.last_event_id?.split(".")[0], names: failed.last_event_message?.includes(EVIL.path), reboots: fleet.reboots() })
        .toEqual({ ...two.tag, event: "ima", names: true, reboots: 0 })
      // FAILED only for the IMA failure: never before it, in either round
      const failedAt = samples.find((s) => s.status.operational_state === failed.operational_state)!.at
      expect({ seed, failedBefore: samples.some((s) => s.at < failedAt && s.status.operational_state === STATE.FAILED) }).toEqual({ seed, failedBefore: false })
      expect({ seed, agent: yield* Effect.promise(() => agent.run.stop()) }).toEqual({ seed, agent: 0 })
      yield* Effect.logInfo(`agent restart without reboot (seed ${seed}): IMA failure ${Date.now() - two.killedAt} ms after kill 2; the test ${Date.now() - startedAt} ms (swtpm, registrar and verifier started in ${fleetAt - startedAt} ms)`)
    }).pipe(Effect.scoped), 300_000)
})
