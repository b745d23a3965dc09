/**
 * The metrics catalog (src/ops/metrics.ts) as the verifier will record it: agents move between
 * state counts, a deleted agent leaves its count and its freshness series, freshness is the age
 * of the last success at scrape time (TestClock), an attestation counts each failure type once.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import {
  forgetAgent,
  metricsCatalog,
  observeFreshness,
  recordAttestation,
  setAgentState,
  stateLabel,
  timeCheck
} from "../../src/ops/metrics.js"
import { scrapePrometheus } from "../../src/ops/prometheus.js"
import { OperationalState } from "../../src/attestation/states.js"
import { parseExposition, valueOf } from "../support/prometheus.js"

const scrape = Effect.map(scrapePrometheus, parseExposition)

describe("metrics catalog", () => {
  it("names every metric once, with a help text and Prometheus-valid names", () => {
    const names = metricsCatalog.map((e) => e.name)
    expect(new Set(names).size).toBe(names.length)
    for (const e of metricsCatalog) {
      expect(e.name, e.name).toMatch(/^attest_[a-z_]+$/)
      expect(e.help.length, e.name).toBeGreaterThan(10)
      if (e.type === "counter") expect(e.name, e.name).toMatch(/_total$/)
    }
  })

  it("labels states with Keylime's names in snake case", () => {
    expect([stateLabel(OperationalState.GET_QUOTE_RETRY), stateLabel(OperationalState.INVALID_QUOTE), stateLabel(OperationalState.PROVIDE_V)])
      .toEqual(["get_quote_retry", "invalid_quote", "provide_v"])
  })

  it.effect("counts agents by operational state as they move, and forgets a deleted agent", () =>
    Effect.gen(function*() {
      yield* setAgentState("m-a", OperationalState.START)
      yield* setAgentState("m-b", OperationalState.START)
      yield* setAgentState("m-a", OperationalState.GET_QUOTE)
      yield* setAgentState("m-a", OperationalState.GET_QUOTE)
      let parsed = yield* scrape
      const count = (state: string) => valueOf(parsed, "attest_agents", { state })
      expect([count("start"), count("get_quote"), count("failed")]).toEqual([1, 1, 0])
      yield* setAgentState("m-b", OperationalState.FAILED)
      yield* forgetAgent("m-a")
      parsed = yield* scrape
      expect([count("start"), count("get_quote"), count("failed")]).toEqual([0, 0, 1])
    }))

  it.effect("gives each agent's seconds since its last success as of the scrape, and drops a deleted agent's series", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(1_000_000)
      yield* observeFreshness("f-1", 990)
      yield* observeFreshness("f-2", 1_000)
      let parsed = yield* scrape
      expect(valueOf(parsed, "attest_agent_attestation_age_seconds", { agent_id: "f-1" })).toBe(10)
      expect(valueOf(parsed, "attest_agent_attestation_age_seconds", { agent_id: "f-2" })).toBe(0)
      yield* TestClock.adjust("30 seconds")
      yield* observeFreshness("f-2", 1_025)
      yield* forgetAgent("f-1")
      parsed = yield* scrape
      expect(valueOf(parsed, "attest_agent_attestation_age_seconds", { agent_id: "f-1" })).toBeUndefined()
      expect(valueOf(parsed, "attest_agent_attestation_age_seconds", { agent_id: "f-2" })).toBe(5)
    }))

  it.effect("counts an attestation once per failure type, however many entries failed with it", () =>
    Effect.gen(function*() {
      const before = yield* scrape
      const failures = (type: string, p = before) => valueOf(p, "attest_attestation_failures_total", { model: "pull", failure_type: type }) ?? 0
      const attestations = (result: string, p = before) => valueOf(p, "attest_attestations_total", { model: "pull", result }) ?? 0
      yield* recordAttestation("pull", false, ["ima.validation.ima-ng.not_in_allowlist", "ima.validation.ima-ng.not_in_allowlist", "pcr_validation.invalid_pcr_0"])
      yield* recordAttestation("pull", true)
      const after = yield* scrape
      expect(failures("ima.validation.ima-ng.not_in_allowlist", after) - failures("ima.validation.ima-ng.not_in_allowlist")).toBe(1)
      expect(failures("pcr_validation.invalid_pcr_0", after) - failures("pcr_validation.invalid_pcr_0")).toBe(1)
      expect([attestations("valid", after) - attestations("valid"), attestations("invalid", after) - attestations("invalid")]).toEqual([1, 1])
    }))

  it.effect("times a check with the Clock into its histogram", () =>
    Effect.gen(function*() {
      const before = valueOf(yield* scrape, "attest_check_duration_seconds_count", { check: "ima" }) ?? 0
      const fiber = yield* Effect.fork(timeCheck("ima")(Effect.sleep("2 seconds")))
      yield* TestClock.adjust("2 seconds")
      yield* fiber.await
      const parsed = yield* scrape
      expect((valueOf(parsed, "attest_check_duration_seconds_count", { check: "ima" }) ?? 0) - before).toBe(1)
      expect(valueOf(parsed, "attest_check_duration_seconds_bucket", { check: "ima", le: "1" })).toBe(0)
      expect(valueOf(parsed, "attest_check_duration_seconds_bucket", { check: "ima", le: "2.5" })).toBe(1)
    }))
})
