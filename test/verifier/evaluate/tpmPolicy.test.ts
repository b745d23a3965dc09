/** `tpm_policy` parsing (a codec: property tests) and the mask the verifier asks the agent to quote. */
import { describe, expect, it } from "@effect/vitest"
import { Either, FastCheck as fc } from "effect"
import { formatMask, parseTpmPolicy, quoteMask, type TpmPolicy } from "../../../src/verifier/index.js"

const parsed = (text: string): TpmPolicy => Either.getOrThrow(parseTpmPolicy(text))
const error = (text: string) => {
  const r = parseTpmPolicy(text)
  return Either.isLeft(r) ? { field: r.left.field, reason: r.left.reason } : undefined
}

const hexDigest = fc.constantFrom(20, 32, 48, 64).chain((n) => fc.uint8Array({ minLength: n, maxLength: n })).map((b) => Buffer.from(b).toString("hex"))
const policyArb = fc.record({
  mask: fc.option(fc.integer({ min: 0, max: 0xffffff }), { nil: undefined }),
  pcrs: fc.dictionary(fc.integer({ min: 0, max: 23 }).map(String), fc.array(hexDigest, { minLength: 1, maxLength: 3 }), { maxKeys: 6 })
})

describe("parseTpmPolicy", () => {
  it("reads Keylime's form: a hex mask, PCR keys with lists or single values, upper case and 0x allowed", () => {
    const p = parsed(`{"mask": "0x408400", "15": ["AB", "0xcd"], "7": "ef"}`)
    expect(p.mask).toBe(0x408400)
    expect([...p.pcrs.entries()].map(([k, v]) => [k, [...v]])).toEqual([[7, ["ef"]], [15, ["ab", "cd"]]])
    expect(parsed(`{"mask": "0x400"}`)).toEqual({ mask: 0x400, pcrs: new Map() })
    expect(parsed(`{}`)).toEqual({ mask: undefined, pcrs: new Map() })
  })

  it("refuses bad input with the field and the reason", () => {
    expect(error(`{"mask": 1024}`)).toEqual({ field: "mask", reason: `must be a hex string such as "0x400", got 1024` })
    expect(error(`{"mask": "0x1000000"}`)).toEqual({ field: "mask", reason: "selects PCRs above 23: 0x1000000" })
    expect(error(`{"pcr": []}`)).toEqual({ field: `"pcr"`, reason: "is neither 'mask' nor a PCR index" })
    expect(error(`{"24": ["ab"]}`)).toEqual({ field: `"24"`, reason: "PCR 24 does not exist (0–23)" })
    expect(error(`{"7": ["ab", "xyz"]}`)).toEqual({ field: `"7"[1]`, reason: `is not a hex digest: "xyz"` })
    expect(error(`{"7": 5}`)).toEqual({ field: `"7"`, reason: "must be a hex digest or a list of them, got 5" })
    expect(error(`[1]`)).toEqual({ field: "(document)", reason: "must be a JSON object" })
    expect(error(`{oops`)?.field).toBe("(document)")
  })

  it("round trip: any policy written as JSON parses back to the same mask and lower-case values", () => {
    fc.assert(
      fc.property(policyArb, fc.boolean(), ({ mask, pcrs }, upper) => {
        const doc: Record<string, unknown> = { ...pcrs }
        if (mask !== undefined) doc["mask"] = `0x${mask.toString(16)}`
        const text = JSON.stringify(doc, (_, v: unknown) => (typeof v === "string" && upper ? v.toUpperCase().replace(/^0X/, "0x") : v))
        const p = parsed(text)
        expect(p.mask).toBe(mask)
        expect(Object.fromEntries([...p.pcrs].map(([k, v]) => [String(k), [...v]]))).toEqual(
          Object.fromEntries(Object.entries(pcrs).map(([k, v]) => [k, [...new Set(v)]]))
        )
      }),
      { numRuns: 300 }
    )
  })

  it("random text ends in a policy or a typed error naming a field, never an exception", () => {
    const jsonish = fc.oneof(
      fc.string(),
      fc.json(),
      fc.dictionary(fc.oneof(fc.constantFrom("mask", "0", "7", "16", "23", "24", "x"), fc.string()), fc.jsonValue()).map((d) => JSON.stringify(d))
    )
    fc.assert(
      fc.property(jsonish, (text) => {
        const r = parseTpmPolicy(text)
        if (Either.isLeft(r)) {
          expect(r.left._tag).toBe("TpmPolicyError")
          expect(r.left.field.length).toBeGreaterThan(0)
        }
      }),
      { numRuns: 500 }
    )
  })
})

describe("quoteMask", () => {
  it("ORs the listed PCRs, bit 10 with a runtime policy and the measured-boot PCRs with a reference state, as the tenant does", () => {
    const p = parsed(`{"mask": "0x1", "15": ["ab"]}`)
    expect(formatMask(quoteMask(p, { runtimePolicy: false, measuredBoot: false }))).toBe("0x8001")
    expect(formatMask(quoteMask(p, { runtimePolicy: true, measuredBoot: false }))).toBe("0x8401")
    expect(formatMask(quoteMask(parsed(`{"mask": "0x0"}`), { runtimePolicy: false, measuredBoot: true }))).toBe("0xfbff")
    expect(formatMask(quoteMask(parsed(`{"mask": "0x0"}`), { runtimePolicy: true, measuredBoot: true }))).toBe("0xffff")
    expect(formatMask(quoteMask(parsed(`{}`), { runtimePolicy: false, measuredBoot: false }))).toBe("0x0")
  })
})
