/** Severity of failures from `[verifier] severity_labels` / `severity_policy`, as Keylime assigns it. */
import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import { makeFailure } from "../../../schemas/Evidence.js"
import { resolveSection } from "../../../src/config/load.js"
import {
  defaultSeverityPolicy,
  escalate,
  isRecoverable,
  makeSeverityPolicy,
  rateFailures,
  severityOf,
  severityPolicyFromOptions
} from "../../../src/verifier/index.js"

const f = (type: string) => makeFailure(type, "m")

describe("severity", () => {
  it("defaults to Keylime's labels with every event at emergency (level 6), so any failure stops polling", () => {
    expect(defaultSeverityPolicy.labels.map((l) => l.name)).toEqual(["info", "notice", "warning", "error", "critical", "alert", "emergency"])
    expect(severityOf(defaultSeverityPolicy, "ima.pcr_mismatch")).toEqual({ name: "emergency", level: 6 })
    const v = rateFailures(defaultSeverityPolicy, [f("pcr_validation.invalid_pcr_7")])
    expect(v.highest?.failure.type).toBe("pcr_validation.invalid_pcr_7")
    expect(v.stopPolling).toBe(true)
    expect(rateFailures(defaultSeverityPolicy, [])).toEqual({ rated: [], highest: undefined, recoverable: true, stopPolling: false })
  })

  it("takes the first rule whose expression matches the whole event id; none matching gives the maximum", () => {
    const p = Either.getOrThrow(
      makeSeverityPolicy(["info", "warning", "critical"], [
        { event_id: "ima\\.validation\\..*", severity_label: "warning" },
        { event_id: "ima\\..*", severity_label: "critical" },
        { event_id: "pcr_validation", severity_label: "info" }
      ])
    )
    expect(severityOf(p, "ima.validation.ima-ng.not_in_allowlist")).toEqual({ name: "warning", level: 1 })
    expect(severityOf(p, "ima.pcr_mismatch")).toEqual({ name: "critical", level: 2 })
    // `pcr_validation` must match the whole id, not a prefix of it.
    expect(severityOf(p, "pcr_validation.invalid_pcr_7")).toEqual({ name: "critical", level: 2 })
    expect(severityOf(p, "measured_boot.policy_example")).toEqual({ name: "critical", level: 2 })
  })

  it("names the highest (first of the highest level), forces irrecoverable failures to the maximum, and stops polling accordingly", () => {
    const p = Either.getOrThrow(makeSeverityPolicy(["low", "mid", "high"], [{ event_id: "ima\\..*", severity_label: "mid" }, { event_id: ".*", severity_label: "low" }]))
    const v = rateFailures(p, [f("pcr_validation.invalid_pcr_7"), f("ima.pcr_mismatch"), f("ima.validation.ima_hash")])
    expect(v.rated.map((r) => r.severity.name)).toEqual(["low", "mid", "mid"])
    expect(v.highest?.failure.type).toBe("ima.pcr_mismatch")
    expect(v.stopPolling).toBe(false)
    const q = rateFailures(p, [f("ima.pcr_mismatch"), f("qoute_validation.quote_validation")])
    expect(q.rated.map((r) => r.severity.name)).toEqual(["mid", "high"])
    expect(q.recoverable).toBe(false)
    expect(q.stopPolling).toBe(true)
    expect([isRecoverable("internal.verifier.no_quote"), isRecoverable("measured_boot.invalid_pcr_0"), isRecoverable("default.missing_param")]).toEqual([false, true, false])
  })

  it("raises an agent's severity_level and last_event_id only to a higher level", () => {
    const p = Either.getOrThrow(makeSeverityPolicy(["low", "mid", "high"], [{ event_id: "ima\\..*", severity_label: "mid" }, { event_id: ".*", severity_label: "low" }]))
    const none = { severity_level: null, last_event_id: null }
    const mid = escalate(none, rateFailures(p, [f("ima.pcr_mismatch")]))
    expect(mid).toEqual({ severity_level: 1, last_event_id: "ima.pcr_mismatch" })
    expect(escalate(mid, rateFailures(p, [f("pcr_validation.invalid_pcr_1")]))).toBe(mid)
    expect(escalate(mid, rateFailures(p, [f("ima.validation.ima_hash")]))).toBe(mid)
    expect(escalate(mid, rateFailures(p, [f("qoute_validation.no_pubkey")]))).toEqual({ severity_level: 2, last_event_id: "qoute_validation.no_pubkey" })
    expect(escalate(mid, rateFailures(p, []))).toBe(mid)
  })

  it("refuses an unknown label, a duplicate label, an invalid expression and an empty label list, naming the option", () => {
    const err = (labels: ReadonlyArray<string>, rules: Parameters<typeof makeSeverityPolicy>[1]) => {
      const r = makeSeverityPolicy(labels, rules)
      return Either.isLeft(r) ? r.left.message : "accepted"
    }
    expect(err(["a", "b"], [{ event_id: ".*", severity_label: "c" }])).toBe(
      "[verifier] severity_policy: rule 0 names severity_label 'c', which is not one of severity_labels (a, b)"
    )
    expect(err(["a", "a"], undefined)).toBe("[verifier] severity_labels: label 'a' appears twice")
    expect(err(["a"], [{ event_id: "(", severity_label: "a" }])).toMatch(/^\[verifier\] severity_policy: rule 0: event_id '\(' is not a valid regular expression/)
    expect(err([], undefined)).toBe("[verifier] severity_labels: needs at least one label")
    // Python's named groups are accepted.
    expect(err(["a"], [{ event_id: "(?P<c>ima)\\..*", severity_label: "a" }])).toBe("accepted")
  })

  it("reads severity_labels and severity_policy from the [verifier] section with Keylime's defaults and JSON text", () => {
    const d = Either.getOrThrow(resolveSection("verifier", { env: {} })).values
    expect(d.severity_labels).toEqual(["info", "notice", "warning", "error", "critical", "alert", "emergency"])
    const defaults = Either.getOrThrow(severityPolicyFromOptions(d))
    expect(defaults.rules.map((r) => r.label.name)).toEqual(["emergency"])
    const v = Either.getOrThrow(
      resolveSection("verifier", {
        env: {
          ATTEST_VERIFIER_SEVERITY_LABELS: `["low", "high"]`,
          // Keylime's verifier.conf spelling, a space before the colon included.
          ATTEST_VERIFIER_SEVERITY_POLICY: `[{"event_id": "ima.*", "severity_label" : "low"}]`
        }
      })
    ).values
    const p = Either.getOrThrow(severityPolicyFromOptions(v))
    expect(severityOf(p, "ima.pcr_mismatch")).toEqual({ name: "low", level: 0 })
    expect(severityOf(p, "pcr_validation.invalid_pcr_7")).toEqual({ name: "high", level: 1 })
    const bad = severityPolicyFromOptions({ ...v, severity_policy: `[{"event_id": 5}]` })
    expect(Either.isLeft(bad) && bad.left.message).toMatch(/^\[verifier\] severity_policy: must be a JSON list of \{"event_id", "severity_label"\}/)
  })
})
