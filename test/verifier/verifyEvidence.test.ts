/**
 * The verify/evidence and verify/identity request logic beyond the captured exchanges: API 2.4's
 * integer form, unusable parameters named, signed runtime policies, measured boot, TEE delegation,
 * and the identity check's Keylime-style reason text.
 */
import { describe, expect, it } from "@effect/vitest"
import { generateKeyPairSync } from "node:crypto"
import { Either, FastCheck as fc } from "effect"
import { makeRuntimePolicy } from "../../schemas/RuntimePolicy.js"
import { createRefState } from "../../src/boot/createRefState.js"
import { examplePolicy } from "../../src/boot/examplePolicy.js"
import { acceptAllPolicy } from "../../src/boot/policy.js"
import { replayPcrs } from "../../src/boot/replay.js"
import { signEnvelope } from "../../src/ima/dsseSign.js"
import { parseVersion } from "../../src/http/versions.js"
import {
  defaultSeverityPolicy,
  inputErrorResults,
  parseIdentityQuery,
  pythonJsonDumps,
  type TeeVerifier,
  type VerifyEvidenceContext,
  verifyEvidenceRequest,
  verifyIdentity
} from "../../src/verifier/index.js"
import { parsed, secureBootLog } from "../boot/support.js"
import { readVector, readVectorText } from "../support/vectors.js"
import { akBytes, ascii, ImaMachine, makeAk, quoteOver } from "./evaluate/fixture.js"

const v = (s: string) => parseVersion(s)!
const dir = ["keylime", "generated", "swtpm-quote-1"] as const
const vectorAk = readVector(...dir, "ak.pub")
const vector = {
  quote: readVectorText(...dir, "quote.txt").trim(),
  nonce: "TestNonce1234567890A",
  hash_alg: "sha256",
  tpm_ek: Buffer.from(readVector(...dir, "ek.pub")).toString("base64"),
  tpm_ak: Buffer.from(vectorAk).toString("base64"),
  ima_measurement_list: readVectorText(...dir, "ima-log.txt"),
  runtime_policy: readVectorText(...dir, "runtime-policy-pass.json")
}
const ctx: VerifyEvidenceContext = { severity: defaultSeverityPolicy, measuredBootPolicy: acceptAllPolicy, reportTomtou: false }

const run = (data: Record<string, unknown>, version = "2.6", c: VerifyEvidenceContext = ctx, type = "tpm") =>
  verifyEvidenceRequest({ type, data }, v(version), c)

const inputError = (r: ReturnType<typeof run>, version = "2.6") =>
  Either.isLeft(r) ? { text: r.left.message, results: inputErrorResults(r.left, v(version)) } : "accepted"

describe("verify/evidence request logic", () => {
  it("answers API 2.4 with an integer valid and no claims, 2.5 and later with a boolean and the echoed data", () => {
    expect(Either.getOrThrow(run(vector, "2.4")).results).toEqual({ valid: 1, failures: [] })
    expect(Either.getOrThrow(run({ ...vector, nonce: "WrongNonce0000000000" }, "2.4")).results).toMatchObject({ valid: 0 })
    expect(Either.getOrThrow(run(vector, "2.5")).results).toEqual({ valid: true, claims: vector, failures: [] })
    expect(inputError(run({ ...vector, quote: "" }, "2.4"), "2.4")).toEqual({
      text: "Bad Request",
      results: { valid: 0, failures: [{ type: "default.missing_param", context: { message: `missing parameter "quote"` } }] }
    })
  })

  it("keeps the verified claims in the evaluation beside the echo", () => {
    const a = Either.getOrThrow(run(vector))
    expect(a.evaluation.claims).toMatchObject({ type: "tpm", ima: { entries: 3, matched: 3 } })
  })

  it("names an unusable parameter: non-string values, a bad tpm_policy, a non-policy runtime_policy, a non-JSON mb_policy, tpm_ak not base64", () => {
    const failure = (r: ReturnType<typeof run>) => (Either.isLeft(r) && r.left._tag === "EvidenceInputInvalid" ? r.left.failures.map((f) => f.context.message) : "accepted")
    expect(failure(run({ ...vector, quote: 5, tpm_policy: [] }))).toEqual([`invalid parameter "quote": must be a string`, `invalid parameter "tpm_policy": must be a string`])
    expect(failure(run({ ...vector, tpm_policy: `{"7": ["xyz"]}` }))).toEqual([`invalid parameter "tpm_policy": "7"[0] is not a hex digest: "xyz"`])
    expect(String(failure(run({ ...vector, runtime_policy: `{"digests": 1}` })))).toMatch(/^invalid parameter "runtime_policy": is not a runtime policy: /)
    expect(String(failure(run({ ...vector, mb_policy: "{oops" })))).toMatch(/^invalid parameter "mb_policy": is not JSON/)
    expect(failure(run({ ...vector, tpm_ak: "not base64!" }))).toEqual([`invalid parameter "tpm_ak": is not base64 (a TPM2B_PUBLIC is expected)`])
    const r = run({ ...vector, tpm_ak: "not base64!" })
    expect(Either.isLeft(r) && inputErrorResults(r.left, v("2.6"))).toMatchObject({ valid: false, claims: {}, failures: [{ type: "default.invalid_param", context: { parameter: "tpm_ak" } }] })
  })

  it("treats null parameters as missing and a non-object data as having none", () => {
    expect(inputError(run({ ...vector, nonce: null }))).toMatchObject({ results: { failures: [{ context: { message: `missing parameter "nonce"` } }] } })
    expect(inputError(verifyEvidenceRequest({ type: "tpm", data: [1, 2] }, v("2.6"), ctx))).toMatchObject({ results: { failures: [{ context: { message: `missing parameter "quote"` } }] } })
    expect(inputError(verifyEvidenceRequest("text", v("2.6"), ctx))).toEqual({ text: "missing parameter 'type'", results: {} })
    expect(inputError(verifyEvidenceRequest({ type: 7, data: {} }, v("2.6"), ctx))).toEqual({ text: "invalid evidence type", results: {} })
  })

  it("accepts a DSSE-wrapped runtime policy and judges with its payload", () => {
    const key = generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey
    const env = Either.getOrThrow(signEnvelope(new Uint8Array(Buffer.from(vector.runtime_policy)), key))
    expect(Either.getOrThrow(run({ ...vector, runtime_policy: JSON.stringify(env) })).results).toMatchObject({ valid: true })
    const failing = Either.getOrThrow(signEnvelope(new Uint8Array(Buffer.from(readVectorText(...dir, "runtime-policy-fail.json"))), key))
    const r = Either.getOrThrow(run({ ...vector, runtime_policy: JSON.stringify(failing) })).results
    expect(r.failures.map((f) => f.type)).toEqual(["ima.validation.ima-ng.not_in_allowlist"])
  })

  it("checks a boot log against an mb_policy with the configured policy, and PCR 16 is not bound to any NK", () => {
    const ak = makeAk("ecc")
    const log = secureBootLog()
    const replayed = replayPcrs(parsed(log)).find((b) => b.hash === "sha256")!.values
    const m = new ImaMachine().measure("boot_aggregate")
    const values = new Map<number, Uint8Array>([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 14].map((p) => [p, replayed.get(p)!]))
    values.set(10, m.pcr10())
    values.set(16, new Uint8Array(32).fill(9))
    const data = {
      quote: quoteOver(ak, { nonce: ascii("EvidenceNonce0000001"), values }),
      nonce: "EvidenceNonce0000001",
      hash_alg: "sha256",
      tpm_ek: "ek",
      tpm_ak: Buffer.from(akBytes(ak)).toString("base64"),
      mb_policy: JSON.stringify(Either.getOrThrow(createRefState(parsed(log))).refstate),
      mb_log: Buffer.from(log).toString("base64"),
      // The boot_aggregate entry is not in the (empty) runtime policy: the log's aggregates admit it only when it matches them.
      ima_measurement_list: m.from(0)
    }
    const example = { ...ctx, measuredBootPolicy: examplePolicy }
    const r = Either.getOrThrow(run(data, "2.6", example)).results
    expect(r.failures.map((f) => f.type)).toEqual(["ima.validation.ima-ng.runtime_policy_hash"])
    const noIma = Either.getOrThrow(run({ ...data, ima_measurement_list: undefined, mb_list: data.mb_log, mb_log: undefined }, "2.6", example))
    // Without a list Keylime replays an empty one: PCR 10 then mismatches; the boot checks pass.
    expect(noIma.results.failures.map((f) => f.type)).toEqual(["ima.pcr_mismatch"])
    const tampered = new Map(values)
    tampered.set(4, new Uint8Array(32))
    const bad = Either.getOrThrow(run({ ...data, ima_measurement_list: m.from(0), runtime_policy: JSON.stringify(makeRuntimePolicy({ digests: m.digests() })), quote: quoteOver(ak, { nonce: ascii("EvidenceNonce0000001"), values: tampered }) }, "2.6", example))
    expect(bad.results.failures.map((f) => f.type)).toEqual(["measured_boot.invalid_pcr_4"])
    const good = Either.getOrThrow(run({ ...data, runtime_policy: JSON.stringify(makeRuntimePolicy({ digests: m.digests() })) }, "2.6", example))
    expect(good.results).toMatchObject({ valid: true, failures: [] })
  })

  it("hands TEE evidence to the injected verifier; its missing parameters are input errors, its claims come back as they are", () => {
    const tee = { "tee-evidence": { tee: "snp", evidence: { "snp-report": "AAAA" } }, nonce: "bm9uY2U=", "tee-pubkey-x-b64": "eA", "tee-pubkey-y-b64": "eQ" }
    const verifyTee: TeeVerifier = (data) => {
      const report = (data as { "tee-evidence": { evidence: Record<string, unknown> } })["tee-evidence"].evidence["snp-report"]
      if (report === undefined) return { valid: false, failures: [{ type: "tee_attestation.missing_param", context: { message: `missing parameter "snp-report"` } }], claims: {} }
      return report === "AAAA"
        ? { valid: true, failures: [], claims: { measurement: "00" } }
        : { valid: false, failures: [{ type: "tee_attestation.invalid_signature", context: { message: "bad" } }], claims: { measurement: "11" } }
    }
    const c = { ...ctx, verifyTee }
    expect(Either.getOrThrow(run(tee, "2.6", c, "tee")).results).toEqual({ valid: true, claims: { measurement: "00" }, failures: [] })
    expect(Either.getOrThrow(run({ ...tee, "tee-evidence": { tee: "snp", evidence: { "snp-report": "BBBB" } } }, "2.6", c, "tee")).results).toMatchObject({
      valid: false,
      claims: { measurement: "11" }
    })
    expect(inputError(run({ ...tee, "tee-evidence": { tee: "snp", evidence: { other: 1 } } }, "2.6", c, "tee"))).toMatchObject({ text: "Bad Request" })
    expect(inputError(run({ ...tee, "tee-pubkey-y-b64": "" }, "2.6", c, "tee"))).toMatchObject({
      results: { failures: [{ type: "tee_attestation.missing_param", context: { message: `missing parameter "tee-pubkey-y-b64"` } }] }
    })
    // No TEE verifier configured: never valid.
    expect(Either.getOrThrow(run(tee, "2.6", ctx, "tee")).results).toMatchObject({ valid: false, failures: [{ type: "tee_attestation.invalid.tee" }] })
  })
})

describe("verify/identity request logic", () => {
  const query = { agent_uuid: "a", quote: vector.quote, nonce: vector.nonce, hash_alg: "sha256" }
  const check = (q: Record<string, string>, ak: Uint8Array = vectorAk) => verifyIdentity(ak, Either.getOrThrow(parseIdentityQuery(q)))

  it("is valid for the vector quote with the vector AK, whatever PCR 16 holds", () => {
    expect(check(query)).toEqual({ valid: 1 })
  })

  it("is invalid with a reason string for another AK, an altered quote or an unknown hash", () => {
    const other = check(query, akBytes(makeAk("rsa")))
    expect(other.valid).toBe(0)
    expect(other.valid === 0 && other.reason).toMatch(/^\{"message": "Quote data validation", "error": "signature: /)
    expect(check({ ...query, quote: "x" + query.quote.slice(1) })).toEqual({
      valid: 0,
      reason: `{"message": "Quote validation failed: quote must start with \\"r\\" (raw parts)"}`
    })
    expect(check({ ...query, hash_alg: "sha1" })).toMatchObject({ valid: 0 })
  })

  it("names the first missing parameter in Keylime's order; empty counts as missing", () => {
    const missing = (q: Record<string, string>) => {
      const r = parseIdentityQuery(q)
      return Either.isLeft(r) ? r.left.message : "ok"
    }
    expect(missing({})).toBe("missing query parameter 'agent_uuid'")
    expect(missing({ ...query, nonce: "", quote: "" })).toBe("missing query parameter 'quote'")
  })

  it("writes contexts as Python's json.dumps does (separators, key order, non-ASCII escaped)", () => {
    expect(pythonJsonDumps({ message: "é\u2028\"x\"", data: [1, null, true, { a: "b" }], n: -2.5 })).toBe(
      `{"message": "\\u00e9\\u2028\\"x\\"", "data": [1, null, true, {"a": "b"}], "n": -2.5}`
    )
    expect(pythonJsonDumps({})).toBe("{}")
    expect(pythonJsonDumps([])).toBe("[]")
  })

  it("writes JSON that parses back to the same value, in printable ASCII only", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const text = pythonJsonDumps(value)
        expect(/^[\x20-\x7e]*$/.test(text)).toBe(true)
        expect(JSON.parse(text)).toEqual(JSON.parse(JSON.stringify(value)))
      }),
      { numRuns: 300 }
    )
  })
})
