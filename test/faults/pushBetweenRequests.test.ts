/**
 * A push agent killed between its two requests, deterministically: `attest push-agent --tpm
 * tpm2-tools` on a swtpm and an IMA list file that outlive it (a restart without a reboot), with
 * the test seam ATTEST_TEST_PUSH_AGENT_DIE_AFTER_CAPABILITIES=2 (src/push-agent/testHooks.ts): its
 * first attestation completes (PASS), then it kills itself with SIGKILL right after the verifier
 * accepted its second capabilities (POST …/attestations 201), before the evidence (PATCH). That
 * attestation is left awaiting evidence. While it is down the machine measures a file the policy
 * allows; it is restarted (without the seam) on the same swtpm and list.
 *
 * - No lockout: its first request after the restart is accepted (no 429/503, no backoff), and the
 *   left attestation is never judged (still awaiting evidence, not a failure).
 * - The deadline is the last verdict's (quote_interval * 5): the creation left behind did not move
 *   it; back within it, only PASS.
 * - The IMA list continues from the last passed attestation (push-model.md, `_determine_ima_offset`:
 *   the previous *passed* attestation of the same boot), not from entry 0, and the entry added
 *   meanwhile is judged.
 *
 * SQLite only: the database is not what is tested here (the verifier is not restarted).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import { decodeEvaluationState } from "../../src/attestation/evaluate/state.js"
import { needsSwtpm } from "../support/requirements.js"
import { machinePolicyBase64 } from "../verifier/pollerSupport.js"
import { activeRecord, PUSH_AGENT_READY, pushEnrolment, startComponent, writePushAgentConfig } from "./components.js"
import { swtpmFleet } from "./swtpmFleet.js"

const QUOTE_INTERVAL = 3
const DEADLINE_MS = QUOTE_INTERVAL * 5 * 1000
/** How late a sample may see a change (every 200 ms, and the request's time on a loaded machine). */
const SAMPLE_SLACK_MS = 2_000
const PUSH = "d432fbb3-d2f1-4a97-9ef7-75bd81c0de12"
const NEW_TOOL = { path: "/usr/bin/new-tool", content: "new tool 1.0" }

interface Attestation {
  readonly idx: number
  readonly stage: string
  readonly evaluation: string
  readonly offset: number | undefined
}

describe("a push agent killed between its capabilities and its evidence", () => {
  it.live.skipIf(!needsSwtpm())("leaves an attestation awaiting evidence that locks nothing out: attesting again at once, PASS within the deadline, the IMA list continued", () =>
    Effect.gen(function*() {
      const startedAt = Date.now()
      const fleet = yield* swtpmFleet(QUOTE_INTERVAL)
      const fleetAt = Date.now()
      const { admin, ca, ima, verifierUrl } = fleet
      const config = writePushAgentConfig(fleet.dir, { id: PUSH, ca, registrarPort: fleet.registrarPort, verifierUrl, interval: QUOTE_INTERVAL, extra: fleet.machineLines })
      const args = ["push-agent", "--config", config, ...fleet.tpmArgs]
      const first = yield* startComponent(args, PUSH_AGENT_READY, { ATTEST_TEST_PUSH_AGENT_DIE_AFTER_CAPABILITIES: "2" })
      yield* Effect.promise(() => first.run.waitFor(/activated with registrar/, 120_000))
      const record = yield* activeRecord(ca, fleet.registrarTlsPort, PUSH)
      const added = yield* admin(verifierUrl, "POST", `/v2.6/agents/${PUSH}`, { ...pushEnrolment(record), runtime_policy: machinePolicyBase64([NEW_TOOL]) })
      expect({ status: added.status, body: added.status === 200 ? "" : added.body }).toEqual({ status: 200, body: "" })
      const { samples, waitFor } = yield* fleet.watch(PUSH)

      const attestations = Effect.map(
        Effect.orDie(fleet.sql<{ idx: number; stage: string; evaluation: string; evidence_requested: string }>`SELECT idx, stage, evaluation, evidence_requested FROM push_attestations WHERE agent_id = ${PUSH} ORDER BY idx`),
        (rows): Array<Attestation> =>
          rows.map((r) => ({
            idx: Number(r.idx),
            stage: r.stage,
            evaluation: r.evaluation,
            offset: (JSON.parse(r.evidence_requested) as Array<{ evidence_type: string; chosen_parameters?: { starting_offset?: number } }>)
              .find((e) => e.evidence_type === "ima_log")?.chosen_parameters?.starting_offset
          }))
      )
      const pushRow = Effect.map(
        Effect.orDie(fleet.sql<{ last_received_at: number; deadline_at: number; evaluation_state: string }>`SELECT last_received_at, deadline_at, evaluation_state FROM push_agents WHERE agent_id = ${PUSH}`),
        ([r]) => ({ lastVerdictAt: Number(r!.last_received_at), deadlineAt: Number(r!.deadline_at), nextEntry: Either.getOrThrow(decodeEvaluationState(r!.evaluation_state)).ima.nextEntry })
      )

      // the seam: one attestation passed, the second left awaiting its evidence
      const exit = yield* Effect.promise(() => Promise.race([first.run.exited, new Promise<string>((r) => setTimeout(() => r("still running after 120 s"), 120_000))]))
      const diedAt = Date.now()
      expect({ exit }).toEqual({ exit: null })
      const atDeath = yield* pushRow
      expect(yield* attestations).toEqual([
        { idx: 0, stage: "verification_complete", evaluation: "pass", offset: 0 },
        { idx: 1, stage: "awaiting_evidence", evaluation: "pending", offset: ima.entries() }
      ])
      // the deadline is the last verdict's: the creation left behind did not move it
      expect({ deadlineAfterVerdict: atDeath.deadlineAt - atDeath.lastVerdictAt, nextEntry: atDeath.nextEntry })
        .toEqual({ deadlineAfterVerdict: DEADLINE_MS, nextEntry: ima.entries() })

      // the machine measures an allowed file while the agent is down; restarted without the seam
      yield* Effect.promise(() => ima.measure(NEW_TOOL.path, NEW_TOOL.content))
      const second = yield* startComponent(args, PUSH_AGENT_READY)
      const counted = (yield* waitFor("a sample", () => true)).attestation_count
      const back = yield* waitFor("PASS after the restart", (s) => s.attestation_count > counted && s.attestation_status === "PASS")
      const backAt = Date.now()
      const rows = yield* attestations
      const after = yield* pushRow
      // attested again at once: its first creation after the restart was accepted, nothing refused it
      expect({ refused: second.run.lines.filter((l) => /attestation failed/.test(l.text)).map((l) => l.text) }).toEqual({ refused: [] })
      expect({ left: rows[1], next: rows[2] }).toEqual({
        left: { idx: 1, stage: "awaiting_evidence", evaluation: "pending", offset: atDeath.nextEntry },
        // continued from the passed attestation of this boot, the new entry judged
        next: { idx: 2, stage: "verification_complete", evaluation: "pass", offset: atDeath.nextEntry }
      })
      expect({ nextEntry: after.nextEntry, reboots: fleet.reboots() }).toEqual({ nextEntry: atDeath.nextEntry + 1, reboots: 0 })
      // back within the deadline: only PASS; later (a very loaded machine): TIMEOUT, never before it
      const statuses = [...new Set(samples.filter((s) => s.at >= diedAt && s.at <= backAt).map((s) => s.status.attestation_status))]
      const timeoutAt = samples.find((s) => s.at >= diedAt && s.status.attestation_status === "TIMEOUT")?.at
      if (after.lastVerdictAt - atDeath.lastVerdictAt < DEADLINE_MS - SAMPLE_SLACK_MS) expect({ statuses }).toEqual({ statuses: ["PASS"] })
      else expect({ timedOutEarly: timeoutAt !== undefined && timeoutAt < atDeath.deadlineAt - SAMPLE_SLACK_MS }).toEqual({ timedOutEarly: false })
      expect({ agent: yield* Effect.promise(() => second.run.stop()) }).toEqual({ agent: 0 })
      yield* Effect.logInfo(
        `push agent killed between its requests: PASS ${backAt - diedAt} ms after its death (${after.lastVerdictAt - atDeath.lastVerdictAt} ms between verdicts, deadline ${DEADLINE_MS} ms); ` +
          `IMA offset ${rows[2]?.offset}; attestations ${counted} -> ${back.attestation_count}; the test ${Date.now() - startedAt} ms (swtpm, registrar and verifier started in ${fleetAt - startedAt} ms)`
      )
    }).pipe(Effect.scoped), 300_000)
})
