/**
 * Measured boot inside evaluateEvidence: Keylime's secureboot vector log judged by the `example`
 * policy over a reference state made from it (quotes over the log's replay), and a simulated
 * machine on the TPM simulator (real TPM2_Quote, boot log, IMA list, PCR 16 bound as the agent does),
 * whose stages (quote, boot, IMA, tpm_policy) the evaluator times when given a clock.
 */
import { describe, expect, it } from "@effect/vitest"
import { createHash } from "node:crypto"
import { Effect, Either, Layer, Option, TestClock } from "effect"
import { makeRuntimePolicy } from "../../../schemas/RuntimePolicy.js"
import { layer as machineLayer, SimulatedMachine } from "../../../src/agent/measurements/SimulatedMachine.js"
import { MeasurementSource } from "../../../src/agent/measurements/MeasurementSource.js"
import { createRefState } from "../../../src/boot/createRefState.js"
import { examplePolicy } from "../../../src/boot/examplePolicy.js"
import type { MbPolicy } from "../../../src/boot/policy.js"
import { replayPcrs } from "../../../src/boot/replay.js"
import { compilePolicy } from "../../../src/ima/policy.js"
import { decodeRuntimePolicy } from "../../../schemas/RuntimePolicy.js"
import { marshalPcrBlob, pcrBlobOf } from "../../../src/tpm/pcrBlob.js"
import { encodeQuoteString } from "../../../src/tpm/quoteString.js"
import { Tpm } from "../../../src/tpm/Tpm.js"
import { TpmSimulator } from "../../../src/tpm/simulator/TpmSimulator.js"
import {
  type AgentPolicy,
  evaluateEvidence,
  initialEvaluationState,
  nkPcrValue,
  type TpmEvidence,
  type TpmPolicy
} from "../../../src/verifier/index.js"
import { parsed, secureBootLog } from "../../boot/support.js"
import { agentPolicy, ascii, makeAk, newNkPem, options, quoteOver, types } from "./fixture.js"

const b64 = (b: Uint8Array) => Buffer.from(b).toString("base64")

describe("measured boot with Keylime's secureboot log and the example policy", () => {
  const ak = makeAk("rsa")
  const nk = newNkPem()
  const logBytes = secureBootLog()
  const replayed = replayPcrs(parsed(logBytes)).find((b) => b.hash === "sha256")!.values
  const refstate = Either.getOrThrow(createRefState(parsed(logBytes))).refstate
  const mbPcrs = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 14]

  const evidence = (change?: (values: Map<number, Uint8Array>) => void, withLog = true): TpmEvidence => {
    const values = new Map<number, Uint8Array>(mbPcrs.map((p) => [p, replayed.get(p)!]))
    values.set(16, new Uint8Array(nkPcrValue("sha256", nk)))
    change?.(values)
    const nonce = ascii("MbNonce0123456789abc")
    return {
      _tag: "tpm",
      nonce,
      quote: quoteOver(ak, { nonce, values }),
      hash_alg: "sha256",
      enc_alg: "rsa",
      sign_alg: "rsassa",
      pubkey: nk,
      boottime: 1,
      ...(withLog ? { mb_measurement_list: b64(logBytes) } : {})
    }
  }
  const policy = (p: Partial<AgentPolicy> = {}) => agentPolicy(ak, { measuredBoot: { policy: examplePolicy, refstate }, ...p })

  it("passes when the quote holds the log's replay and the log meets the reference state; claims carry the boot aggregates", () => {
    const r = evaluateEvidence(evidence(), policy(), initialEvaluationState)
    expect(r.failures).toEqual([])
    const claims = r.claims?.type === "tpm" ? r.claims : undefined
    expect(claims?.boot_aggregates?.sha256).toHaveLength(2)
  })

  it("a quoted PCR that differs from the log's replay is measured_boot.invalid_pcr_<n>", () => {
    const r = evaluateEvidence(evidence((v) => v.set(4, createHash("sha256").update("other boot").digest())), policy(), initialEvaluationState)
    expect(types(r)).toEqual(["measured_boot.invalid_pcr_4"])
    expect(r.failures[0]!.context).toMatchObject({ pcr: 4, hash: "sha256" })
  })

  it("a relevant PCR missing from the quote is measured_boot.missing_pcrs", () => {
    const r = evaluateEvidence(evidence((v) => v.delete(14)), policy(), initialEvaluationState)
    expect(types(r)).toEqual(["measured_boot.missing_pcrs"])
  })

  it("judges the reference state on the first attestation only with `once`, on every one with `always`", () => {
    const strict = { ...refstate, kernels: refstate.kernels.map((k) => ({ ...k, kernel_cmdline: "never-this" })) }
    const p = (evaluate: "once" | "always") => policy({ measuredBoot: { policy: examplePolicy, refstate: strict }, options: options({ measuredBootEvaluate: evaluate, checkClock: false }) })
    const later = { ...initialEvaluationState, nk, count: 3 }
    expect(types(evaluateEvidence(evidence(), p("once"), initialEvaluationState))).toEqual(["measured_boot.policy_example"])
    expect(types(evaluateEvidence(evidence(), p("once"), later))).toEqual([])
    expect(types(evaluateEvidence(evidence(), p("always"), later))).toEqual(["measured_boot.policy_example"])
    // The PCR comparison runs on every attestation either way.
    expect(types(evaluateEvidence(evidence((v) => v.set(0, new Uint8Array(32))), p("once"), later))).toEqual(["measured_boot.invalid_pcr_0"])
  })

  it("a reference state without a log leaves every quoted measured-boot PCR unaccounted for (pcr_validation.unused_pcr_<n>)", () => {
    const r = evaluateEvidence(evidence(undefined, false), policy(), initialEvaluationState)
    expect(types(r)).toEqual(mbPcrs.map((p) => `pcr_validation.unused_pcr_${p}`))
  })

  it("a log that does not parse is measured_boot.parser.* before the PCR checks", () => {
    const r = evaluateEvidence({ ...evidence(), mb_measurement_list: b64(logBytes.subarray(0, 100)) }, policy(), initialEvaluationState)
    expect(types(r)[0]).toMatch(/^measured_boot\.parser\./)
  })

  it("tpm_policy values of measured-boot PCRs are checked too", () => {
    const tpmPolicy: TpmPolicy = { mask: undefined, pcrs: new Map([[7, new Set(["00".repeat(32)])]]) }
    expect(types(evaluateEvidence(evidence(), policy({ tpmPolicy }), initialEvaluationState))).toEqual(["pcr_validation.invalid_pcr_7"])
  })
})

/** A policy that only compares the PCRs 0–9 with the log (its judgement: the refstate's `ok`). */
const pcrOnly: MbPolicy = {
  name: "pcr-only",
  relevantPcrs: new Set([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]),
  evaluate: (refstate) => ((refstate as { ok?: boolean }).ok === true ? "" : "refstate says no")
}

describe("a simulated machine on the TPM simulator", () => {
  const world = machineLayer({ name: "eval-sim", banks: ["sha256"] }).pipe(Layer.provideMerge(TpmSimulator.layer({ seed: "evaluate-mb", banks: ["sha1", "sha256"] })))

  it.effect("its real quotes pass, then a new file and a changed boot PCR fail with the reference's types", () =>
    Effect.gen(function*() {
      const tpm = yield* Tpm
      const machine = yield* SimulatedMachine
      const source = yield* MeasurementSource
      const ak = yield* tpm.createAk("rsa", { alg: "rsa", hash: "sha256", scheme: "rsassa" })
      const nk = newNkPem()
      // What the agent does at start: PCR 16 := H(0 ‖ H(NK PEM)).
      yield* tpm.pcrReset(16)
      yield* tpm.pcrExtend(16, [{ hash: "sha256", digest: new Uint8Array(createHash("sha256").update(nk).digest()) }])
      const selection = [{ hash: "sha256" as const, pcrs: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 16] }]
      const bootLog = b64(Option.getOrThrow(yield* source.bootLog))
      let n = 0
      const answer = (fromEntry: number, full: boolean) =>
        Effect.gen(function*() {
          // TPM clock time passes between two quotes (the clock check wants it to grow).
          yield* TestClock.adjust("2 seconds")
          const nonce = ascii(`SimNonce${String(n++).padStart(12, "0")}`)
          const q = yield* tpm.quote(ak, { nonce, selection })
          const list = Option.getOrThrow(yield* source.imaList(fromEntry))
          const ev: TpmEvidence = {
            _tag: "tpm",
            nonce,
            quote: encodeQuoteString({ attest: q.attest, signature: q.signature, pcrBlob: marshalPcrBlob(pcrBlobOf(selection, q.pcrs)) }),
            hash_alg: "sha256",
            enc_alg: "rsa",
            sign_alg: "rsassa",
            boottime: 1,
            ...(full ? { pubkey: nk } : {}),
            ima_measurement_list: list.list,
            ima_measurement_list_entry: list.entry,
            mb_measurement_list: bootLog
          }
          return ev
        })
      // The runtime policy allows what the machine measured at boot, except boot_aggregate: that comes from the boot log.
      const lines = Option.getOrThrow(yield* source.imaList(0)).list.split("\n").filter((l) => l !== "" && !l.endsWith(" boot_aggregate"))
      const digests: Record<string, Array<string>> = {}
      for (const l of lines) digests[l.split(" ")[4]!] = [l.split(" ")[3]!.slice(7)]
      const runtimePolicy = Either.getOrThrow(compilePolicy(Either.getOrThrow(decodeRuntimePolicy(makeRuntimePolicy({ digests })))))
      const policy = agentPolicy(ak.public, {
        runtimePolicy,
        measuredBoot: { policy: pcrOnly, refstate: { ok: true } }
      })

      const firstEvidence = yield* answer(0, true)
      const first = evaluateEvidence(firstEvidence, policy, initialEvaluationState)
      expect(first.failures).toEqual([])
      expect(first.nextState.ima.nextEntry).toBe(yield* machine.entries)
      expect(first.stages).toBeUndefined()
      // given a clock, the same judgement also says when each stage ran, in the evaluator's order
      let tick = 0
      const timed = evaluateEvidence(firstEvidence, policy, initialEvaluationState, () => ++tick)
      expect(timed.stages).toEqual([
        { stage: "quote", start: 1, end: 2 },
        { stage: "boot", start: 3, end: 4 },
        { stage: "ima", start: 5, end: 6 },
        { stage: "pcrs", start: 7, end: 8 }
      ])
      expect({ ...timed, stages: undefined }).toEqual(first)

      yield* machine.measure("/usr/bin/evil", "evil")
      const second = evaluateEvidence(yield* answer(first.nextState.ima.nextEntry, false), policy, first.nextState)
      expect(types(second)).toEqual(["ima.validation.ima-ng.not_in_allowlist"])
      expect(second.claims).toMatchObject({ ima: { entries: 1 } })

      yield* tpm.pcrExtend(4, [{ hash: "sha256", digest: new Uint8Array(32).fill(7) }])
      const third = evaluateEvidence(yield* answer(0, true), policy, second.nextState)
      expect(types(third)).toEqual(["ima.validation.ima-ng.not_in_allowlist", "measured_boot.invalid_pcr_4"])
    }).pipe(Effect.provide(world))
  )
})
