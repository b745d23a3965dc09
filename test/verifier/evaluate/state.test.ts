/** The persisted evaluation state: a JSON codec (round trip, and garbage is a typed error). */
import { describe, expect, it } from "@effect/vitest"
import { Arbitrary, Either, FastCheck as fc, Schema } from "effect"
import { EvaluationStateFromJson } from "../../../src/attestation/evaluate/state.js"
import {
  decodeEvaluationState,
  encodeEvaluationState,
  EvaluationState,
  initialEvaluationState
} from "../../../src/verifier/index.js"

describe("EvaluationState", () => {
  it("round trip: every state encodes to JSON and decodes to a state with the same JSON", () => {
    fc.assert(
      // Boot times are integers from the agent (ImaState's Number also admits what JSON cannot carry).
      fc.property(Arbitrary.make(EvaluationState).filter((s) => s.ima.bootTime === null || Number.isSafeInteger(s.ima.bootTime)), (s) => {
        // Compared as JSON text: -0 and 0 are one number on the wire.
        const json = encodeEvaluationState(s)
        expect(encodeEvaluationState(Either.getOrThrow(decodeEvaluationState(json)))).toBe(json)
      }),
      { numRuns: 300 }
    )
  })

  it("the direct writer is the schema's encoding", () => {
    const bySchema = Schema.encodeSync(EvaluationStateFromJson)
    fc.assert(
      fc.property(Arbitrary.make(EvaluationState).filter((s) => s.ima.bootTime === null || Number.isSafeInteger(s.ima.bootTime)), (s) => {
        expect(JSON.parse(encodeEvaluationState(s))).toEqual(JSON.parse(bySchema(s)))
      }),
      { numRuns: 300 }
    )
  })

  it("stores the TPM clock (u64) as a decimal string and stays small", () => {
    const s: EvaluationState = {
      ...initialEvaluationState,
      clock: { clock: 18_446_744_073_709_551_615n, resetCount: 3, restartCount: 1 },
      count: 7,
      ima: { nextEntry: 12_000, pcrs: { sha256: "ab".repeat(32) }, learnedKeys: [], bootTime: 1_700_000_000 }
    }
    const json = encodeEvaluationState(s)
    expect(json).toContain(`"clock":"18446744073709551615"`)
    expect(json.length).toBeLessThan(300)
    expect(decodeEvaluationState(json)).toEqual(Either.right(s))
  })

  it("garbage and mutated rows end in a ParseError, never an exception", () => {
    const good = encodeEvaluationState(initialEvaluationState)
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.integer({ min: 0, max: good.length - 1 }).chain((i) => fc.string({ maxLength: 3 }).map((s) => good.slice(0, i) + s + good.slice(i + 1)))), (text) => {
        const r = decodeEvaluationState(text)
        if (Either.isLeft(r)) expect(r.left._tag).toBe("ParseError")
      }),
      { numRuns: 500 }
    )
    expect(Either.isLeft(decodeEvaluationState(`{"ima":{},"nk":null,"clock":null,"count":-1,"alg":{"hash":"","enc":"","sign":""}}`))).toBe(true)
  })
})
