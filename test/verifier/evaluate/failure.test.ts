/** One failure type: IMA and measured-boot failures are attestation Failures (schemas/Evidence.ts). */
import { describe, expect, expectTypeOf, it } from "@effect/vitest"
import { Either, Schema } from "effect"
import { Failure, makeFailure } from "../../../schemas/Evidence.js"
import { evaluateMeasuredBoot, type MbFailure } from "../../../src/boot/evaluate.js"
import { rejectAllPolicy } from "../../../src/boot/policy.js"
import { failure as imaFailure, type ImaFailure } from "../../../src/ima/failure.js"
import { secureBootLog } from "../../boot/support.js"

describe("the one failure type", () => {
  it("ImaFailure and MbFailure are Failures, and their values decode as Failure unchanged", () => {
    expectTypeOf<ImaFailure>().toMatchTypeOf<Failure>()
    expectTypeOf<MbFailure>().toEqualTypeOf<Failure>()
    const ima = imaFailure("ima.validation.ima-ng.not_in_allowlist", "File not found in allowlist: /x (entry 2)", 2, "/x")
    const mb = evaluateMeasuredBoot({ log: secureBootLog(), quotedPcrs: [], refstate: { any: 1 } }, rejectAllPolicy).failures[0]!
    for (const f of [ima, mb]) expect(Schema.decodeUnknownEither(Failure)(f)).toEqual(Either.right(f))
    expect(mb.type).toBe("measured_boot.policy_reject-all")
  })

  it("makeFailure puts the message first, as Keylime's contexts read, and never lets a fact replace it", () => {
    expect(Object.keys(makeFailure("t", "m", { data: 1, got: "x" }).context)).toEqual(["message", "data", "got"])
    expect(makeFailure("t", "m", { message: "other" }).context).toEqual({ message: "m" })
  })
})
