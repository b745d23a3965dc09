/**
 * The pull state machine (keylime-wire.md §2) as tables: each row is a state, an event and the
 * exact next state and effects. Sequences check Keylime's retry timing, the first-quote → PROVIDE_V
 * path, and the severity rule that decides whether polling stops.
 */
import { describe, expect, it } from "@effect/vitest"
import {
  EVENT,
  type LoopEffect,
  type LoopEvent,
  type LoopState,
  type MachineConfig,
  retryDelay,
  step
} from "../../src/verifier/pull/machine.js"
import { OperationalState as S } from "../../src/attestation/states.js"

/** Keylime's defaults: every event is "emergency" (6, the highest) unless the policy says otherwise. */
const config: MachineConfig = {
  quoteInterval: 2,
  retryInterval: 2,
  exponentialBackoff: true,
  maxRetries: 5,
  severityOf: (eventId) => (eventId.startsWith("ima.") ? 3 : 6),
  maxSeverity: 6
}

const fresh: LoopState = {
  operationalState: S.START,
  retryCount: 0,
  attestationCount: 0,
  severityLevel: null,
  lastEventId: null,
  hasV: true,
  vDelivered: false,
  pubkeyKnown: false,
  imaEntry: 0
}
const polling: LoopState = { ...fresh, operationalState: S.GET_QUOTE, vDelivered: true, pubkeyKnown: true, imaEntry: 7, attestationCount: 4 }

const valid = (imaEntry = 9): LoopEvent => ({ _tag: "QuoteReceived", verdict: { _tag: "Valid" }, imaEntry, pubkeyKnown: true })
const invalid = (eventId: string, severity: number, recoverable = true): LoopEvent => ({
  _tag: "QuoteReceived",
  verdict: { _tag: "Invalid", eventId, severity, recoverable },
  imaEntry: 0,
  pubkeyKnown: true
})

type Row = readonly [string, LoopState, LoopEvent, Partial<LoopState>, ReadonlyArray<LoopEffect>]

const TABLE: ReadonlyArray<Row> = [
  ["a new agent asks for a full quote from entry 0", fresh, { _tag: "Begin" }, { operationalState: S.GET_QUOTE }, [
    { _tag: "PersistState", operationalState: S.GET_QUOTE },
    { _tag: "RequestQuote", partial: 0, imaEntry: 0 }
  ]],
  ["a resumed agent with a known NK asks for a partial quote from its stored entry", polling, { _tag: "Begin" }, {}, [
    { _tag: "RequestQuote", partial: 1, imaEntry: 7 }
  ]],
  ["a resumed retry stays a retry and asks for a full quote", { ...polling, operationalState: S.GET_QUOTE_RETRY, retryCount: 2 }, { _tag: "Begin" }, { operationalState: S.GET_QUOTE_RETRY }, [
    { _tag: "RequestQuote", partial: 0, imaEntry: 7 }
  ]],
  ["resumed in PROVIDE_V with the NK known: delivers V", { ...fresh, operationalState: S.PROVIDE_V, pubkeyKnown: true }, { _tag: "Begin" }, {}, [{ _tag: "DeliverV" }]],
  ["resumed in PROVIDE_V without the NK: a full quote first", { ...fresh, operationalState: S.PROVIDE_V_RETRY, retryCount: 1 }, { _tag: "Begin" }, { operationalState: S.GET_QUOTE, retryCount: 0 }, [
    { _tag: "PersistState", operationalState: S.GET_QUOTE, retryCount: 0 },
    { _tag: "RequestQuote", partial: 0, imaEntry: 0 }
  ]],
  ["a stopped agent's loop ends", { ...polling, operationalState: S.TENANT_FAILED }, { _tag: "Begin" }, {}, [{ _tag: "Finish", reason: "stopped" }]],
  ["a TERMINATED agent is deleted by its loop", { ...polling, operationalState: S.TERMINATED }, { _tag: "Begin" }, {}, [
    { _tag: "DeleteAgent" },
    { _tag: "Finish", reason: "deleted" }
  ]],
  ["a failed agent's loop ends", { ...polling, operationalState: S.FAILED }, { _tag: "Begin" }, {}, [{ _tag: "Finish", reason: "failed" }]],
  ["an invalid agent is not resumed", { ...polling, operationalState: S.INVALID_QUOTE }, { _tag: "Begin" }, {}, [{ _tag: "Finish", reason: "invalid" }]],
  ["the first valid quote of an agent with V → PROVIDE_V, V delivered at once", { ...fresh, operationalState: S.GET_QUOTE }, valid(2), {
    operationalState: S.PROVIDE_V,
    attestationCount: 1,
    imaEntry: 2,
    pubkeyKnown: true
  }, [
    { _tag: "PersistVerdict", operationalState: S.PROVIDE_V, valid: true, event: undefined, nextPollAfter: null },
    { _tag: "DeliverV" }
  ]],
  ["V delivered → GET_QUOTE, next quote after quote_interval", { ...fresh, operationalState: S.PROVIDE_V, pubkeyKnown: true }, { _tag: "VDelivered" }, {
    operationalState: S.GET_QUOTE,
    vDelivered: true
  }, [
    { _tag: "PersistState", operationalState: S.GET_QUOTE, vDelivered: true, retryCount: 0, nextPollAfter: 2 },
    { _tag: "ScheduleNext", after: 2 }
  ]],
  ["a valid quote once V is delivered keeps polling", polling, valid(12), { attestationCount: 5, imaEntry: 12 }, [
    { _tag: "PersistVerdict", operationalState: S.GET_QUOTE, valid: true, event: undefined, nextPollAfter: 2 },
    { _tag: "ScheduleNext", after: 2 }
  ]],
  ["an agent added without V never enters PROVIDE_V", { ...fresh, hasV: false, operationalState: S.GET_QUOTE }, valid(1), { operationalState: S.GET_QUOTE, attestationCount: 1, imaEntry: 1, pubkeyKnown: true }, [
    { _tag: "PersistVerdict", operationalState: S.GET_QUOTE, valid: true, event: undefined, nextPollAfter: 2 },
    { _tag: "ScheduleNext", after: 2 }
  ]],
  ["the timer asks for the next partial quote from the next entry", polling, { _tag: "Tick" }, {}, [{ _tag: "RequestQuote", partial: 1, imaEntry: 7 }]],
  ["an invalid quote of the highest severity: INVALID_QUOTE, revocation, polling stops", polling, invalid("qoute_validation.quote_validation", 6), {
    operationalState: S.INVALID_QUOTE,
    severityLevel: 6,
    lastEventId: "qoute_validation.quote_validation",
    attestationCount: 4,
    imaEntry: 0
  }, [
    { _tag: "PersistVerdict", operationalState: S.INVALID_QUOTE, valid: false, event: { eventId: "qoute_validation.quote_validation", severityLevel: 6 }, nextPollAfter: null },
    { _tag: "Notify", kind: "revocation", event: { eventId: "qoute_validation.quote_validation", severityLevel: 6 } },
    { _tag: "Finish", reason: "invalid" }
  ]],
  ["a recoverable failure below the highest severity keeps polling after quote_interval", polling, invalid("ima.pcr_mismatch", 3), {
    operationalState: S.INVALID_QUOTE,
    severityLevel: 3,
    lastEventId: "ima.pcr_mismatch",
    imaEntry: 0
  }, [
    { _tag: "PersistVerdict", operationalState: S.INVALID_QUOTE, valid: false, event: { eventId: "ima.pcr_mismatch", severityLevel: 3 }, nextPollAfter: 2 },
    { _tag: "Notify", kind: "revocation", event: { eventId: "ima.pcr_mismatch", severityLevel: 3 } },
    { _tag: "ScheduleNext", after: 2 }
  ]],
  ["a non-recoverable failure stops polling whatever its severity", polling, invalid("ima.pcr_mismatch", 3, false), { operationalState: S.INVALID_QUOTE, severityLevel: 3, lastEventId: "ima.pcr_mismatch", imaEntry: 0 }, [
    { _tag: "PersistVerdict", operationalState: S.INVALID_QUOTE, valid: false, event: { eventId: "ima.pcr_mismatch", severityLevel: 3 }, nextPollAfter: null },
    { _tag: "Notify", kind: "revocation", event: { eventId: "ima.pcr_mismatch", severityLevel: 3 } },
    { _tag: "Finish", reason: "invalid" }
  ]],
  ["the same failure again at the same severity is not notified again", { ...polling, operationalState: S.INVALID_QUOTE, severityLevel: 3, lastEventId: "ima.pcr_mismatch" }, invalid("ima.quote_progress", 3), {
    severityLevel: 3,
    lastEventId: "ima.pcr_mismatch",
    imaEntry: 0
  }, [
    { _tag: "PersistVerdict", operationalState: S.INVALID_QUOTE, valid: false, event: { eventId: "ima.quote_progress", severityLevel: 3 }, nextPollAfter: 2 },
    { _tag: "ScheduleNext", after: 2 }
  ]],
  ["a recovered agent failing again at its old severity is notified (a new failure)", { ...polling, severityLevel: 3, lastEventId: "ima.pcr_mismatch" }, invalid("ima.pcr_mismatch", 3), {
    operationalState: S.INVALID_QUOTE,
    imaEntry: 0
  }, [
    { _tag: "PersistVerdict", operationalState: S.INVALID_QUOTE, valid: false, event: { eventId: "ima.pcr_mismatch", severityLevel: 3 }, nextPollAfter: 2 },
    { _tag: "Notify", kind: "revocation", event: { eventId: "ima.pcr_mismatch", severityLevel: 3 } },
    { _tag: "ScheduleNext", after: 2 }
  ]],
  ["a valid quote after a recoverable failure goes back to GET_QUOTE and keeps the severity", { ...polling, operationalState: S.INVALID_QUOTE, severityLevel: 3, lastEventId: "ima.pcr_mismatch" }, valid(3), {
    operationalState: S.GET_QUOTE,
    severityLevel: 3,
    attestationCount: 5,
    imaEntry: 3
  }, [
    { _tag: "PersistVerdict", operationalState: S.GET_QUOTE, valid: true, event: undefined, nextPollAfter: 2 },
    { _tag: "ScheduleNext", after: 2 }
  ]],
  ["unreachable: GET_QUOTE_RETRY, retried after retry_interval ** 1", polling, { _tag: "QuoteUnreachable", reason: "ECONNREFUSED" }, {
    operationalState: S.GET_QUOTE_RETRY,
    retryCount: 1
  }, [
    { _tag: "PersistRetry", operationalState: S.GET_QUOTE_RETRY, retryCount: 1, after: 2 },
    { _tag: "ScheduleNext", after: 2 }
  ]],
  ["a retry asks for a full quote", { ...polling, operationalState: S.GET_QUOTE_RETRY, retryCount: 1 }, { _tag: "Tick" }, {}, [{ _tag: "RequestQuote", partial: 0, imaEntry: 7 }]],
  ["unreachable after max_retries, never attested: FAILED, not_reachable, no notification", { ...fresh, operationalState: S.GET_QUOTE_RETRY, retryCount: 5 }, { _tag: "QuoteUnreachable", reason: "timeout" }, {
    operationalState: S.FAILED,
    severityLevel: 6,
    lastEventId: EVENT.notReachable
  }, [
    { _tag: "PersistFailed", event: { eventId: EVENT.notReachable, severityLevel: 6 } },
    { _tag: "Finish", reason: "failed" }
  ]],
  ["unreachable after max_retries, attested before: comm_error notified", { ...polling, operationalState: S.GET_QUOTE_RETRY, retryCount: 5 }, { _tag: "QuoteUnreachable", reason: "timeout" }, {
    operationalState: S.FAILED,
    severityLevel: 6,
    lastEventId: EVENT.notReachable
  }, [
    { _tag: "PersistFailed", event: { eventId: EVENT.notReachable, severityLevel: 6 } },
    { _tag: "Notify", kind: "comm_error", event: { eventId: EVENT.notReachable, severityLevel: 6 } },
    { _tag: "Finish", reason: "failed" }
  ]],
  ["another non-200 answer: FAILED with no_quote", polling, { _tag: "QuoteRefused", reason: "no_quote" }, { operationalState: S.FAILED, severityLevel: 6, lastEventId: EVENT.noQuote }, [
    { _tag: "PersistFailed", event: { eventId: EVENT.noQuote, severityLevel: 6 } },
    { _tag: "Finish", reason: "failed" }
  ]],
  ["the agent refuses the API version: FAILED with version_not_supported", polling, { _tag: "QuoteRefused", reason: "version_not_supported" }, { operationalState: S.FAILED, severityLevel: 6, lastEventId: EVENT.versionNotSupported }, [
    { _tag: "PersistFailed", event: { eventId: EVENT.versionNotSupported, severityLevel: 6 } },
    { _tag: "Finish", reason: "failed" }
  ]],
  ["V unreachable: PROVIDE_V_RETRY", { ...fresh, operationalState: S.PROVIDE_V, pubkeyKnown: true }, { _tag: "VUnreachable", reason: "timeout" }, {
    operationalState: S.PROVIDE_V_RETRY,
    retryCount: 1
  }, [
    { _tag: "PersistRetry", operationalState: S.PROVIDE_V_RETRY, retryCount: 1, after: 2 },
    { _tag: "ScheduleNext", after: 2 }
  ]],
  ["the timer retries the V delivery", { ...fresh, operationalState: S.PROVIDE_V_RETRY, retryCount: 1, pubkeyKnown: true }, { _tag: "Tick" }, {}, [{ _tag: "DeliverV" }]],
  ["V unreachable after max_retries: FAILED, not_reachable_v, comm_error", { ...fresh, operationalState: S.PROVIDE_V_RETRY, retryCount: 5, pubkeyKnown: true, attestationCount: 1 }, { _tag: "VUnreachable", reason: "timeout" }, {
    operationalState: S.FAILED,
    severityLevel: 6,
    lastEventId: EVENT.notReachableV
  }, [
    { _tag: "PersistFailed", event: { eventId: EVENT.notReachableV, severityLevel: 6 } },
    { _tag: "Notify", kind: "comm_error", event: { eventId: EVENT.notReachableV, severityLevel: 6 } },
    { _tag: "Finish", reason: "failed" }
  ]],
  ["V refused: FAILED with no_v", { ...fresh, operationalState: S.PROVIDE_V, pubkeyKnown: true }, { _tag: "VRefused" }, { operationalState: S.FAILED, severityLevel: 6, lastEventId: EVENT.noV }, [
    { _tag: "PersistFailed", event: { eventId: EVENT.noV, severityLevel: 6 } },
    { _tag: "Finish", reason: "failed" }
  ]],
  ["a defect in a cycle: FAILED with exception", polling, { _tag: "Crashed", message: "boom" }, { operationalState: S.FAILED, severityLevel: 6, lastEventId: EVENT.exception }, [
    { _tag: "PersistFailed", event: { eventId: EVENT.exception, severityLevel: 6 } },
    { _tag: "Finish", reason: "failed" }
  ]],
  ["a FAILED event below a stored higher severity keeps the stored one", { ...polling, severityLevel: 6, lastEventId: "x.y" }, { _tag: "QuoteRefused", reason: "no_quote" }, {
    operationalState: S.FAILED,
    severityLevel: 6,
    lastEventId: "x.y"
  }, [
    { _tag: "PersistFailed", event: { eventId: EVENT.noQuote, severityLevel: 6 } },
    { _tag: "Finish", reason: "failed" }
  ]],
  ["stop: TENANT_FAILED and the loop ends", polling, { _tag: "Stop" }, { operationalState: S.TENANT_FAILED }, [{ _tag: "Finish", reason: "stopped" }]],
  ["delete: the row goes and the loop ends", polling, { _tag: "Delete" }, { operationalState: S.TERMINATED }, [{ _tag: "DeleteAgent" }, { _tag: "Finish", reason: "deleted" }]],
  ["reactivate: a fresh cycle (full quote from entry 0, V again)", { ...polling, operationalState: S.INVALID_QUOTE }, { _tag: "Reactivate" }, {
    operationalState: S.GET_QUOTE,
    vDelivered: false,
    pubkeyKnown: false,
    imaEntry: 0
  }, [
    { _tag: "PersistState", operationalState: S.GET_QUOTE, retryCount: 0, vDelivered: false },
    { _tag: "RequestQuote", partial: 0, imaEntry: 0 }
  ]],
  ["a lost write to a stop ends the loop", polling, { _tag: "Superseded", storedState: S.TENANT_FAILED }, { operationalState: S.TENANT_FAILED }, [{ _tag: "Finish", reason: "stopped" }]],
  ["a lost write to a delete (202) deletes the row", polling, { _tag: "Superseded", storedState: S.TERMINATED }, { operationalState: S.TERMINATED }, [{ _tag: "DeleteAgent" }, { _tag: "Finish", reason: "deleted" }]],
  ["a lost write to a reactivation reloads the row", polling, { _tag: "Superseded", storedState: S.START }, {}, [{ _tag: "Reload" }]],
  ["a lost write to anything else ends the loop", polling, { _tag: "Superseded", storedState: S.FAILED }, {}, [{ _tag: "Finish", reason: "superseded" }]],
  ["a quote answer while delivering V is ignored", { ...fresh, operationalState: S.PROVIDE_V }, valid(), {}, []],
  ["a V answer while quoting is ignored", polling, { _tag: "VDelivered" }, {}, []],
  ["a timer in a stopped state does nothing", { ...polling, operationalState: S.TENANT_FAILED }, { _tag: "Tick" }, {}, []]
]

describe("pull state machine", () => {
  for (const [name, state, event, changes, effects] of TABLE) {
    it(name, () => {
      const next = step(state, event, config)
      expect(next.effects).toEqual(effects)
      expect(next.state).toEqual({ ...state, ...changes })
    })
  }

  it("retries an unreachable agent at 2, 4, 8, 16, 32 s, then fails (Keylime's observed timing)", () => {
    let s: LoopState = { ...fresh, operationalState: S.GET_QUOTE }
    const delays: Array<number> = []
    for (;;) {
      const r = step(s, { _tag: "QuoteUnreachable", reason: "ECONNREFUSED" }, config)
      s = r.state
      const next = r.effects.find((e) => e._tag === "ScheduleNext")
      if (next === undefined || next._tag !== "ScheduleNext") break
      delays.push(next.after)
      expect(step(s, { _tag: "Tick" }, config).effects).toEqual([{ _tag: "RequestQuote", partial: 0, imaEntry: 0 }])
    }
    expect(delays).toEqual([2, 4, 8, 16, 32])
    expect([s.operationalState, s.lastEventId]).toEqual([S.FAILED, EVENT.notReachable])
  })

  it("with the replay's settings (retry_interval 1, fixed) an agent at a closed port fails after 2 retries of 1 s", () => {
    const replay = { ...config, retryInterval: 1, exponentialBackoff: false, maxRetries: 2 }
    let s: LoopState = { ...fresh, operationalState: S.GET_QUOTE }
    const effects: Array<LoopEffect> = []
    for (let i = 0; i < 3; i++) {
      const r = step(s, { _tag: "QuoteUnreachable", reason: "ECONNREFUSED" }, replay)
      s = r.state
      effects.push(...r.effects)
    }
    expect(effects.filter((e) => e._tag === "ScheduleNext")).toEqual([{ _tag: "ScheduleNext", after: 1 }, { _tag: "ScheduleNext", after: 1 }])
    expect([s.operationalState, s.severityLevel, s.lastEventId]).toEqual([7, 6, "internal.verifier.not_reachable"])
  })

  it("a whole first cycle: full quote, V, then partial quotes from the next entry every quote_interval", () => {
    const events: ReadonlyArray<LoopEvent> = [{ _tag: "Begin" }, valid(2), { _tag: "VDelivered" }, { _tag: "Tick" }, valid(5), { _tag: "Tick" }]
    let s = fresh
    const requests: Array<LoopEffect> = []
    for (const e of events) {
      const r = step(s, e, config)
      s = r.state
      requests.push(...r.effects.filter((x) => x._tag === "RequestQuote" || x._tag === "DeliverV"))
    }
    expect(requests).toEqual([
      { _tag: "RequestQuote", partial: 0, imaEntry: 0 },
      { _tag: "DeliverV" },
      { _tag: "RequestQuote", partial: 1, imaEntry: 2 },
      { _tag: "RequestQuote", partial: 1, imaEntry: 5 }
    ])
    expect([s.operationalState, s.attestationCount, s.vDelivered]).toEqual([S.GET_QUOTE, 2, true])
  })

  it("retry_time: retry_interval ** n only with exponential backoff and an interval above 1, else |retry_interval|", () => {
    const rows: ReadonlyArray<readonly [number, number, boolean, number]> = [
      [1, 2, true, 2],
      [3, 2, true, 8],
      [5, 2, true, 32],
      [4, 3, true, 81],
      [3, 1, true, 1],
      [3, 0.5, true, 0.5],
      [3, 2, false, 2],
      [2, -3, false, 3],
      [2, -3, true, 3]
    ]
    for (const [n, interval, exponential, delay] of rows) {
      expect(retryDelay(n, interval, exponential), `n=${n} interval=${interval} exponential=${exponential}`).toBe(delay)
    }
  })
})
