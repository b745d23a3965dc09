/**
 * The evaluator on the swtpm vector (vectors/keylime/generated/swtpm-quote-1, checked with Keylime's
 * Tpm.check_quote): the verdicts its README records, and altered evidence refused with the
 * reference's failure types.
 */
import { expect, it } from "@effect/vitest"
import { Either } from "effect"
import { decodeRuntimePolicyJson } from "../../../schemas/RuntimePolicy.js"
import { compilePolicy } from "../../../src/ima/policy.js"
import {
  type AgentPolicy,
  evaluateEvidence,
  initialEvaluationState,
  parseTpmPolicy,
  type TpmEvidence
} from "../../../src/verifier/index.js"
import { readVector, readVectorText } from "../../support/vectors.js"
import { eachCryptoPort, settled } from "../../support/cryptoPorts.js"
import { ascii, newNkPem, options, types } from "./fixture.js"

// the evaluation with every RSA check answered (the portable port asks WebCrypto)
const evaluated = (...a: Parameters<typeof evaluateEvidence>) => settled(() => evaluateEvidence(...a))

const dir = ["keylime", "generated", "swtpm-quote-1"] as const
const ak = readVector(...dir, "ak.pub")
const ek = readVector(...dir, "ek.pub")
const quote = readVectorText(...dir, "quote.txt").trim()
const list = readVectorText(...dir, "ima-log.txt")
const nk = readVectorText(...dir, "agent-pubkey.pem")
const compiled = (name: string) => Either.getOrThrow(compilePolicy(Either.getOrThrow(decodeRuntimePolicyJson(readVectorText(...dir, name)))))
const pass = compiled("runtime-policy-pass.json")
const fail = compiled("runtime-policy-fail.json")

const PCR10 = "7e99dba391d6bebd924a5be9a87f76707ff3908b2ed5ae9939ede823d2872f80"
const PCR16 = "207ecd103a5f02951cf689078dea3e8538250fe18fa41076a7954e9da626de7d"

const evidence = (e: Partial<TpmEvidence> = {}): TpmEvidence => ({
  _tag: "tpm",
  nonce: ascii("TestNonce1234567890A"),
  quote,
  hash_alg: "sha256",
  enc_alg: "rsa",
  sign_alg: "rsassa",
  pubkey: nk,
  boottime: 1_763_000_000,
  ima_measurement_list: list,
  ima_measurement_list_entry: 0,
  ...e
})

const policy = (p: Partial<AgentPolicy> = {}): AgentPolicy => ({
  ak,
  accept: { hash: ["sha512", "sha384", "sha256"], encryption: ["ecc", "rsa"], signing: ["ecschnorr", "rsassa"] },
  tpmPolicy: Either.getOrThrow(parseTpmPolicy(`{"mask": "0x10400"}`)),
  runtimePolicy: pass,
  options: options(),
  ...p
})

eachCryptoPort("evaluateEvidence on the swtpm vector", () => {
  it("passes with runtime-policy-pass, verifies PCR 10 and 16, and advances the state past the 3 entries", async () => {
    const r = await evaluated(evidence(), policy(), initialEvaluationState)
    expect(r.failures).toEqual([])
    expect(r.claims).toMatchObject({ type: "tpm", hash_alg: "sha256", pcrs: { "10": PCR10, "16": PCR16 }, ima: { entries: 3, matched: 3, next_entry: 3 } })
    expect(r.nextState.ima).toMatchObject({ nextEntry: 3, pcrs: { sha256: PCR10 } })
    expect(r.nextState.count).toBe(1)
    expect(r.nextState.nk).toBe(nk)
    expect(r.nextState.alg).toEqual({ hash: "sha256", enc: "rsa", sign: "rsassa" })
    expect(r.nextState.clock?.resetCount).toBeTypeOf("number")
    expect(r.nkChanged).toBe(true)
    expect(r.severity.stopPolling).toBe(false)
  })

  it("fails with runtime-policy-fail: /usr/bin/evil is not_in_allowlist, the IMA progress resets, nothing is counted", async () => {
    const r = await evaluated(evidence(), policy({ runtimePolicy: fail }), initialEvaluationState)
    expect(types(r)).toEqual(["ima.validation.ima-ng.not_in_allowlist"])
    expect(r.failures[0]!.context).toMatchObject({ path: "/usr/bin/evil", line: 3 })
    expect(r.nextState.ima.nextEntry).toBe(0)
    expect(r.nextState.count).toBe(0)
    expect(r.nkChanged).toBe(false)
    expect(r.severity.highest?.severity).toEqual({ name: "emergency", level: 6 })
    expect(r.severity.stopPolling).toBe(true)
  })

  it("refuses a wrong nonce with qoute_validation.quote_validation naming the nonce check", async () => {
    const r = await evaluated(evidence({ nonce: ascii("WrongNonce0000000000") }), policy(), initialEvaluationState)
    expect(types(r)).toEqual(["qoute_validation.quote_validation"])
    expect(r.failures[0]!.context).toEqual({ message: "Quote data validation", error: "The nonce from the attestation differs from the expected nonce" })
    expect(r.claims).toBeUndefined()
    expect(r.severity.recoverable).toBe(false)
  })

  it("refuses the quote checked with another key (the EK) as AK", async () => {
    const r = await evaluated(evidence(), policy({ ak: ek }), initialEvaluationState)
    expect(types(r)).toEqual(["qoute_validation.quote_validation"])
    expect(String(r.failures[0]!.context["error"])).toContain("not a restricted signing key")
  })

  it("refuses an altered quote: a flipped attest byte breaks the signature or the parse", async () => {
    const raw = Buffer.from(quote.slice(1, quote.indexOf(":")), "base64")
    // The last byte of TPMS_ATTEST is inside pcrDigest: the signature no longer covers it.
    raw[raw.length - 1] ^= 1
    const altered = `r${raw.toString("base64")}${quote.slice(quote.indexOf(":"))}`
    const r = await evaluated(evidence({ quote: altered }), policy(), initialEvaluationState)
    expect(types(r)).toEqual(["qoute_validation.quote_validation"])
    expect(String(r.failures[0]!.context["error"])).toMatch(/^pcr_digest: /)
  })

  it("refuses a quote string of the wrong shape as qoute_validation.invalid_quote", async () => {
    const r = await evaluated(evidence({ quote: quote.slice(1) }), policy(), initialEvaluationState)
    expect(types(r)).toEqual(["qoute_validation.invalid_quote"])
  })

  it("refuses another NK than the one PCR 16 holds with pcr_validation.invalid_pcr_16", async () => {
    const r = await evaluated(evidence({ pubkey: newNkPem() }), policy(), initialEvaluationState)
    expect(types(r)).toEqual(["pcr_validation.invalid_pcr_16"])
    expect(r.failures[0]!.context["got"]).toBe(PCR16)
  })

  it("refuses a tpm_policy value the quoted PCR does not hold, and a listed PCR the quote lacks", async () => {
    const wrong = "00".repeat(32)
    const r = await evaluated(evidence(), policy({ tpmPolicy: Either.getOrThrow(parseTpmPolicy(`{"mask": "0x10400", "16": "${PCR16}", "15": ["${wrong}"]}`)) }), initialEvaluationState)
    // 16 belongs to the NK binding (its list is not consulted), 15 is not in the quote.
    expect(types(r)).toEqual(["pcr_validation.missing_pcrs"])
    expect(r.failures[0]!.context["data"]).toEqual([15])
    const r2 = await evaluated(evidence(), policy({ options: options({ bindNk: false }), tpmPolicy: Either.getOrThrow(parseTpmPolicy(`{"16": ["${wrong}", "ab"]}`)) }), initialEvaluationState)
    expect(types(r2)).toEqual(["pcr_validation.invalid_pcr_16"])
    expect(r2.failures[0]!.context).toEqual({ message: "PCR value is not in allowlist", context: "PCR value is not in allowlist", got: PCR16, expected: [wrong, "ab"] })
    const r3 = await evaluated(evidence(), policy({ options: options({ bindNk: false }), tpmPolicy: Either.getOrThrow(parseTpmPolicy(`{"16": ["${PCR16.toUpperCase()}"]}`)) }), initialEvaluationState)
    expect(r3.failures).toEqual([])
  })

  it("refuses an unaccepted or unknown hash algorithm before looking at the quote", async () => {
    const r = await evaluated(evidence({ hash_alg: "md5" }), policy(), initialEvaluationState)
    expect(r.failures).toEqual([{ type: "qoute_validation.invalid_hash_alg", context: { message: "TPM Quote is using an unaccepted hash algorithm: md5", data: "md5" } }])
    const r2 = await evaluated(evidence(), policy({ accept: { hash: ["sha384"], encryption: ["rsa"], signing: ["rsassa"] } }), initialEvaluationState)
    expect(types(r2)).toEqual(["qoute_validation.invalid_hash_alg"])
    expect(r2.nextState).toEqual(initialEvaluationState)
  })

  it("without a list for the quoted PCR 10 reports pcr_validation.unused_pcr_10", async () => {
    const r = await evaluated(evidence({ ima_measurement_list: undefined }), policy(), initialEvaluationState)
    expect(types(r)).toEqual(["pcr_validation.unused_pcr_10"])
  })

  it("with a truncated list reports ima.pcr_mismatch", async () => {
    const two = list.split("\n").slice(0, 2).join("\n") + "\n"
    const r = await evaluated(evidence({ ima_measurement_list: two }), policy(), initialEvaluationState)
    expect(types(r)).toEqual(["ima.pcr_mismatch"])
  })
})
