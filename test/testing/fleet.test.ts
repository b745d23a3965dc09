/**
 * attest/testing: one scripted hour of a 50-agent fleet (45 pull, 5 push) run twice with the same
 * seed gives the same verdict log, byte for byte, and the log holds what the script caused: agent 3's
 * unknown binary an IMA failure from minute 7 and not before, no agent failed or timed out for the
 * minute the database was away, agent 5 FAILED after max_retries retries once its network dropped.
 * A shorter third run with another seed (other keys, other nonces) gives the same verdicts through
 * the database's minute and agent 5's retries: a third full hour would add 20 s of CI for no new fact.
 */
import { Effect } from "effect"
import { describe, expect, it } from "vitest"
import { databaseDown, FLEET_VERIFIER_DEFAULTS, type FleetRun, networkDown, runFleet, runsBinary, type VerdictLine } from "../../src/testing/index.js"

const MINUTE = 60_000
const script = [
  runsBinary(3, "7 minutes", "/usr/local/bin/miner"),
  databaseDown("9 minutes", "10 minutes"),
  networkDown(5, "12 minutes"),
  networkDown(20, "30 minutes")
]
const run = (seed: string, minutes: number) =>
  Effect.runPromise(runFleet({ seed, agents: 50, push: (n) => n % 10 === 0, duration: `${minutes} minutes`, script }))
/** The other seed's run: past minute 12's network drop and agent 5's retries. */
const SHORT_MINUTES = 16

const of = (run: FleetRun, agentId: string) => run.lines.filter((l) => l.agentId === agentId)
const outcome = (l: VerdictLine) => ({ at: l.at, agentId: l.agentId, model: l.model, result: l.result, failures: l.failures, state: l.state, retry: l.retry })

describe("deterministic fleet runs (attest/testing)", () => {
  it("gives the same verdict log for the same seed, with the failures the script caused", async () => {
    const started = performance.now()
    const cpu = process.cpuUsage()
    const first = await run("fleet-seed-1", 60)
    const second = await run("fleet-seed-1", 60)
    const other = await run("fleet-seed-2", SHORT_MINUTES)
    const wallSeconds = (performance.now() - started) / 1000
    const used = process.cpuUsage(cpu)
    // written past vitest's console capture: the figure is wanted when the test passes
    process.stdout.write(
      `attest/testing: two runs of a 50-agent hour and one of ${SHORT_MINUTES} minutes: ${wallSeconds.toFixed(1)} s wall, ${((used.user + used.system) / 1e6).toFixed(1)} s CPU (${first.lines.length} verdicts a run)\n`
    )

    expect(second.text).toEqual(first.text)
    expect(first.lines.length).toBeGreaterThan(2500)
    expect(first.agentIds).toHaveLength(50)

    // agent 3: passes until minute 7, then an IMA failure within one quote interval, and polling stops
    const three = of(first, "agent-03")
    const firstFail = three.findIndex((l) => l.result !== "pass")
    expect(firstFail).toBeGreaterThan(0)
    expect(three.slice(0, firstFail).every((l) => l.at < 7 * MINUTE)).toBe(true)
    const fail = three[firstFail]!
    expect(fail.result).toEqual("fail")
    expect(fail.at).toBeGreaterThanOrEqual(7 * MINUTE)
    expect(fail.at).toBeLessThanOrEqual(8 * MINUTE)
    expect(fail.failures.length).toBeGreaterThan(0)
    expect(fail.failures.every((t) => t.startsWith("ima."))).toBe(true)
    expect(three.slice(firstFail + 1)).toEqual([])

    // the database's minute: no verdict written while it was away, and nobody failed for it
    expect(first.lines.filter((l) => l.at > 9 * MINUTE && l.at < 10 * MINUTE)).toEqual([])
    const scripted = new Set(["agent-03", "agent-05", "agent-20"])
    expect(first.lines.filter((l) => !scripted.has(l.agentId) && l.result !== "pass")).toEqual([])
    // and every agent attests again after it
    for (const id of first.agentIds.filter((a) => !scripted.has(a))) {
      expect(of(first, id).some((l) => l.at >= 10 * MINUTE && l.at < 12 * MINUTE)).toBe(true)
    }

    // agent 5 (pull): max_retries retries after its network dropped at minute 12, then FAILED, then silence
    const five = of(first, "agent-05").filter((l) => l.at >= 12 * MINUTE)
    const maxRetries = FLEET_VERIFIER_DEFAULTS.max_retries!
    expect(five.map((l) => [l.result, l.retry, l.failures])).toEqual([
      ...Array.from({ length: maxRetries }, (_, i) => ["retry", `${i + 1}/${maxRetries}`, []]),
      ["failed", undefined, ["internal.verifier.not_reachable"]]
    ])
    expect(five.at(-1)!.state).toEqual("Failed")
    expect(of(first, "agent-05").filter((l) => l.at < 12 * MINUTE).every((l) => l.result === "pass")).toBe(true)

    // agent 20 (push): its deadline (5 quote intervals after its last pass) passes: TIMEOUT, once
    const twenty = of(first, "agent-20").filter((l) => l.at >= 30 * MINUTE)
    expect(twenty.map((l) => l.result)).toEqual(["timeout"])
    expect(twenty[0]!.at).toBeGreaterThan(30 * MINUTE + 4 * MINUTE)
    expect(twenty[0]!.at).toBeLessThanOrEqual(30 * MINUTE + 6 * MINUTE)

    // another seed: other keys and nonces, the same verdicts at the same moments (a minute short of
    // its end, so that a round cut by the end of the run is not compared)
    const until = (SHORT_MINUTES - 1) * MINUTE
    const upTo = (r: FleetRun) => r.lines.filter((l) => l.at < until).map(outcome)
    expect(upTo(other)).toEqual(upTo(first))
    expect(upTo(other).filter((l) => l.agentId === "agent-05").at(-1)?.result).toEqual("failed")
    expect(wallSeconds).toBeLessThan(600)
  }, 900_000)
})
