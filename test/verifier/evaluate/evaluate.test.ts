/**
 * evaluateEvidence over fresh quotes (RSA and ECC AKs) whose PCR 10 follows a growing IMA list:
 * pull rounds with the state carried over, partial quotes, the clock, the algorithm gates, the
 * IMA start rules and TEE delegation.
 */
import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import { makeRuntimePolicy } from "../../../schemas/RuntimePolicy.js"
import { compilePolicy } from "../../../src/ima/policy.js"
import { decodeRuntimePolicy } from "../../../schemas/RuntimePolicy.js"
import {
  type AgentPolicy,
  evaluateEvidence,
  type Evaluation,
  type EvaluationState,
  initialEvaluationState,
  makeSeverityPolicy
} from "../../../src/verifier/index.js"
import { agentPolicy, ImaMachine, makeAk, newNkPem, options, pullEvidence, type TestAk, types } from "./fixture.js"

const compiled = (m: ImaMachine) => Either.getOrThrow(compilePolicy(Either.getOrThrow(decodeRuntimePolicy(makeRuntimePolicy({ digests: m.digests() })))))

const files = (m: ImaMachine, from: number, n: number) => {
  for (let i = from; i < from + n; i++) m.measure(`/usr/bin/tool-${i}`)
  return m
}

for (const alg of ["rsa", "ecc"] as const) {
  describe(`evaluateEvidence, pull rounds with an ${alg.toUpperCase()} AK`, () => {
    const ak: TestAk = makeAk(alg)
    const nk = newNkPem()

    it("two rounds with the state carried over evaluate only the new entries and end where one full round ends", () => {
      const m = files(new ImaMachine().measure("boot_aggregate"), 0, 6)
      const policy = agentPolicy(ak, { runtimePolicy: compiled(files(new ImaMachine().measure("boot_aggregate"), 0, 10)) })
      const first = evaluateEvidence(pullEvidence({ ak, nk, machine: m, fromEntry: 0, clock: { clock: 100n } }), policy, initialEvaluationState)
      expect(first.failures).toEqual([])
      expect(first.nextState.ima.nextEntry).toBe(7)
      files(m, 6, 4)
      const second = evaluateEvidence(pullEvidence({ ak, nk, full: false, machine: m, fromEntry: 7, clock: { clock: 200n } }), policy, first.nextState)
      expect(second.failures).toEqual([])
      expect(second.claims).toMatchObject({ ima: { entries: 4, matched: 4, next_entry: 11 } })
      const whole = evaluateEvidence(pullEvidence({ ak, nk, machine: m, fromEntry: 0, clock: { clock: 200n } }), policy, initialEvaluationState)
      expect(whole.claims).toMatchObject({ ima: { entries: 11, matched: 11, next_entry: 11 } })
      expect(second.nextState.ima).toEqual(whole.nextState.ima)
      expect(second.nextState.count).toBe(2)
      expect(second.nkChanged).toBe(false)
    })

    it("a new entry outside the policy fails the incremental round as it fails a full one", () => {
      const m = files(new ImaMachine().measure("boot_aggregate"), 0, 3)
      const policy = agentPolicy(ak, { runtimePolicy: compiled(m) })
      const first = evaluateEvidence(pullEvidence({ ak, nk, machine: m, fromEntry: 0, clock: { clock: 100n } }), policy, initialEvaluationState)
      m.measure("/usr/bin/evil")
      const second = evaluateEvidence(pullEvidence({ ak, nk, full: false, machine: m, fromEntry: 4, clock: { clock: 200n } }), policy, first.nextState)
      const whole = evaluateEvidence(pullEvidence({ ak, nk, machine: m, fromEntry: 0, clock: { clock: 200n } }), policy, initialEvaluationState)
      expect(types(second)).toEqual(["ima.validation.ima-ng.not_in_allowlist"])
      expect(second.failures).toEqual(whole.failures)
      expect(second.failures[0]!.context).toMatchObject({ path: "/usr/bin/evil", line: 5 })
      // Keylime resets the IMA progress on an IMA failure; the next request starts from entry 0.
      expect(second.nextState.ima.nextEntry).toBe(0)
    })

    it("entries the quote does not cover yet wait for the next round", () => {
      const m = files(new ImaMachine().measure("boot_aggregate"), 0, 5)
      const policy = agentPolicy(ak, { runtimePolicy: compiled(m) })
      const r = evaluateEvidence(pullEvidence({ ak, nk, machine: m, fromEntry: 0, pcr10Entries: 4 }), policy, initialEvaluationState)
      expect(r.failures).toEqual([])
      expect(r.claims).toMatchObject({ ima: { entries: 6, matched: 4, next_entry: 4 } })
    })

    it("a partial quote is bound to the NK of the last accepted quote; without one it is qoute_validation.no_pubkey", () => {
      const m = new ImaMachine().measure("boot_aggregate")
      const policy = agentPolicy(ak, { runtimePolicy: compiled(m) })
      const none = evaluateEvidence(pullEvidence({ ak, nk, full: false, machine: m, fromEntry: 0 }), policy, initialEvaluationState)
      expect(types(none)).toEqual(["qoute_validation.no_pubkey"])
      expect(none.severity.stopPolling).toBe(true)
      const first = evaluateEvidence(pullEvidence({ ak, nk, machine: m, fromEntry: 0, clock: { clock: 10n } }), policy, initialEvaluationState)
      // The agent restarted with a new NK but the verifier asked for a partial quote.
      const other = newNkPem()
      const partial = evaluateEvidence(pullEvidence({ ak, nk: other, full: false, machine: m, fromEntry: 1, clock: { clock: 20n } }), policy, first.nextState)
      expect(types(partial)).toEqual(["pcr_validation.invalid_pcr_16"])
      const full = evaluateEvidence(pullEvidence({ ak, nk: other, machine: m, fromEntry: 1, clock: { clock: 20n } }), policy, first.nextState)
      expect(full.failures).toEqual([])
      expect(full.nkChanged).toBe(true)
      expect(full.nextState.nk).toBe(other)
    })

    it("a quote without PCR 16 is pcr_validation.missing_pcr_16", () => {
      const r = evaluateEvidence(pullEvidence({ ak, nk, omitPcr16: true }), agentPolicy(ak), initialEvaluationState)
      expect(types(r)).toEqual(["pcr_validation.missing_pcr_16"])
    })

    it("refuses a clock that goes back, a decreasing reset or restart count and an unsafe clock", () => {
      const policy = agentPolicy(ak)
      const at = (clock: Partial<{ clock: bigint; resetCount: number; restartCount: number; safe: boolean }>, prior: EvaluationState) =>
        evaluateEvidence(pullEvidence({ ak, nk, clock }), policy, prior)
      const first = at({ clock: 5000n, resetCount: 3, restartCount: 2 }, initialEvaluationState)
      expect(first.failures).toEqual([])
      expect(first.nextState.clock).toEqual({ clock: 5000n, resetCount: 3, restartCount: 2 })
      const reason = (e: Evaluation) => [e.failures[0]?.type, e.failures[0]?.context["data"]]
      expect(reason(at({ clock: 4000n, resetCount: 3, restartCount: 2 }, first.nextState))).toEqual([
        "qoute_validation.quote_validation",
        "clock timestamp issued by TPM did not increase between two consecutive quotes"
      ])
      expect(reason(at({ clock: 5000n, resetCount: 3, restartCount: 2 }, first.nextState))[1]).toMatch(/did not increase/)
      expect(reason(at({ clock: 9000n, resetCount: 2, restartCount: 2 }, first.nextState))[1]).toBe("resetCount value decreased on TPM between two consecutive quotes")
      expect(reason(at({ clock: 9000n, resetCount: 3, restartCount: 1 }, first.nextState))[1]).toBe("restartCount value decreased on TPM between two consecutive quotes")
      expect(reason(at({ clock: 9000n, safe: false, resetCount: 3, restartCount: 2 }, first.nextState))[1]).toBe("clock safe flag is disabled")
      // A reboot: resetCount up, restartCount back to 0, the clock may be anywhere.
      expect(at({ clock: 10n, resetCount: 4, restartCount: 0 }, first.nextState).failures).toEqual([])
      // A resume: restartCount up within the same reset.
      expect(at({ clock: 4000n, resetCount: 3, restartCount: 3 }, first.nextState).failures).toEqual([])
      // Without a previous quote (or with checkClock off) any safe clock is fine.
      const off = evaluateEvidence(pullEvidence({ ak, nk, clock: { clock: 1n } }), agentPolicy(ak, { options: options({ checkClock: false }) }), first.nextState)
      expect(off.failures).toEqual([])
    })

    it("gates enc_alg and sign_alg against the accept lists (rsa accepts rsa2048, not rsa3072)", () => {
      const ev = pullEvidence({ ak, nk })
      const accept = (p: Partial<NonNullable<AgentPolicy["accept"]>>) =>
        agentPolicy(ak, { accept: { hash: ["sha256"], encryption: ["rsa", "ecc"], signing: ["rsassa", "ecdsa"], ...p } })
      expect(types(evaluateEvidence({ ...ev, enc_alg: alg === "rsa" ? "rsa2048" : "ecc256" }, accept({}), initialEvaluationState))).toEqual([])
      expect(types(evaluateEvidence({ ...ev, enc_alg: "rsa3072" }, accept({}), initialEvaluationState))).toEqual(["qoute_validation.invalid_enc_alg"])
      expect(types(evaluateEvidence(ev, accept({ signing: ["rsapss"] }), initialEvaluationState))).toEqual(["qoute_validation.invalid_sign_alg"])
      expect(types(evaluateEvidence({ ...ev, sign_alg: "ecschnorr" }, accept({ signing: ["ecschnorr"] }), initialEvaluationState))).toEqual([
        "qoute_validation.quote_validation"
      ])
      // The scheme the agent names must be the quote's (no silent switch of schemes).
      const claimed = alg === "rsa" ? "rsapss" : "rsassa"
      const r = evaluateEvidence({ ...ev, sign_alg: claimed }, accept({ signing: [claimed] }), initialEvaluationState)
      expect(types(r)).toEqual(["qoute_validation.quote_validation"])
      expect(String(r.failures[0]!.context["error"])).toMatch(/^scheme: /)
    })

    it("an agent that answers from another entry than asked fails with qoute_validation.invalid_ima_entry_nb", () => {
      const m = files(new ImaMachine().measure("boot_aggregate"), 0, 3)
      const policy = agentPolicy(ak, { runtimePolicy: compiled(m) })
      const first = evaluateEvidence(pullEvidence({ ak, nk, machine: m, fromEntry: 0, clock: { clock: 10n } }), policy, initialEvaluationState)
      const r = evaluateEvidence(pullEvidence({ ak, nk, machine: m, fromEntry: 2, clock: { clock: 20n } }), policy, first.nextState)
      expect(types(r)).toEqual(["qoute_validation.invalid_ima_entry_nb"])
      expect(r.severity.recoverable).toBe(false)
    })

    it("a changed boot time restarts IMA from entry 0: no failure, nothing counted, restart flagged", () => {
      const m = files(new ImaMachine().measure("boot_aggregate"), 0, 3)
      const policy = agentPolicy(ak, { runtimePolicy: compiled(m) })
      const first = evaluateEvidence(pullEvidence({ ak, nk, machine: m, fromEntry: 0, clock: { clock: 10n } }), policy, initialEvaluationState)
      const r = evaluateEvidence(pullEvidence({ ak, nk, full: false, machine: m, fromEntry: 4, boottime: 1_800_000_000, clock: { clock: 5n, resetCount: 4 } }), policy, first.nextState)
      expect(r.failures).toEqual([])
      expect(r.restart).toBe(true)
      expect(r.nextState.count).toBe(first.nextState.count)
      expect(r.nextState.ima).toEqual({ nextEntry: 0, pcrs: {}, learnedKeys: [], bootTime: 1_800_000_000 })
      // The NK may have changed with the reboot: the next quote must carry it.
      expect(r.nextState.nk).toBeNull()
      expect(types(evaluateEvidence(pullEvidence({ ak, nk, full: false, machine: m, fromEntry: 0, boottime: 1_800_000_000, clock: { clock: 6n, resetCount: 4 } }), policy, r.nextState))).toEqual(["qoute_validation.no_pubkey"])
      const again = evaluateEvidence(pullEvidence({ ak, nk, machine: m, fromEntry: 0, boottime: 1_800_000_000, clock: { clock: 6n, resetCount: 4 } }), policy, r.nextState)
      expect(again.failures).toEqual([])
      expect(again.nextState.count).toBe(first.nextState.count + 1)
    })

    it("the quote is checked even on a restart round: a wrong nonce still fails", () => {
      const m = new ImaMachine().measure("boot_aggregate")
      const policy = agentPolicy(ak, { runtimePolicy: compiled(m) })
      const first = evaluateEvidence(pullEvidence({ ak, nk, machine: m, fromEntry: 0, clock: { clock: 10n } }), policy, initialEvaluationState)
      const ev = pullEvidence({ ak, nk, machine: m, fromEntry: 1, boottime: 1_800_000_000, clock: { clock: 20n } })
      const r = evaluateEvidence({ ...ev, nonce: new Uint8Array(20) }, policy, first.nextState)
      expect(types(r)).toEqual(["qoute_validation.quote_validation"])
    })
  })
}

describe("evaluateEvidence, severity and TEE delegation", () => {
  const ak = makeAk("ecc")
  const nk = newNkPem()

  it("a custom severity policy labels each failure; a recoverable failure below the maximum lets polling go on", () => {
    const severity = Either.getOrThrow(makeSeverityPolicy(["low", "mid", "high"], [{ event_id: "ima\\..*", severity_label: "mid" }]))
    const m = new ImaMachine().measure("boot_aggregate").measure("/usr/bin/evil")
    const policy = agentPolicy(ak, { options: options({ severity }), runtimePolicy: compiled(new ImaMachine().measure("boot_aggregate")) })
    const r = evaluateEvidence(pullEvidence({ ak, nk, machine: m, fromEntry: 0 }), policy, initialEvaluationState)
    expect(types(r)).toEqual(["ima.validation.ima-ng.not_in_allowlist"])
    expect(r.severity.highest?.severity).toEqual({ name: "mid", level: 1 })
    expect(r.severity.recoverable).toBe(true)
    expect(r.severity.stopPolling).toBe(false)
    const q = evaluateEvidence({ ...pullEvidence({ ak, nk }), nonce: new Uint8Array(1) }, policy, initialEvaluationState)
    // Irrecoverable failures always take the highest label, whatever the rules say.
    expect(q.severity.highest?.severity).toEqual({ name: "high", level: 2 })
    expect(q.severity.stopPolling).toBe(true)
  })

  it("TEE evidence goes to the injected verifier; without one it is never valid", () => {
    const tee: AgentPolicy = { ...agentPolicy(ak), verifyTee: (data) => ({ valid: data === "good", failures: data === "good" ? [] : [{ type: "tee_attestation.invalid_signature", context: { message: "bad report" } }], claims: { measurement: "ab" } }) }
    const good = evaluateEvidence({ _tag: "tee", data: "good" }, tee, initialEvaluationState)
    expect(good.failures).toEqual([])
    expect(good.claims).toEqual({ type: "tee", claims: { measurement: "ab" } })
    expect(good.nextState.count).toBe(1)
    expect(types(evaluateEvidence({ _tag: "tee", data: "bad" }, tee, initialEvaluationState))).toEqual(["tee_attestation.invalid_signature"])
    expect(types(evaluateEvidence({ _tag: "tee", data: "good" }, agentPolicy(ak), initialEvaluationState))).toEqual(["tee_attestation.invalid.tee"])
  })
})
