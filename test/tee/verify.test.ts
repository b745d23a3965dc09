/**
 * verifyTeeEvidence end to end: the real Milan report with AMD's chain, and reports the tests build
 * and sign with a test ARK → ASK → VCEK chain for freshness, TCB, chip id and every policy rule.
 */
import { describe, expect, it } from "@effect/vitest"
import { Either, FastCheck as fc } from "effect"
import { makeChainCache, TEE_FAILURE, verifySnpEvidence, verifyTeeEvidence } from "../../src/tee/index.js"
import { POLICY, PLATFORM } from "../../src/tee/snp/report.js"
import { encodeTcb } from "../../src/tee/snp/tcb.js"
import { vcekDirectoryOf, vcekEntry } from "../../src/tee/snp/vcekDirectory.js"
import { eachCryptoPort, settled } from "../support/cryptoPorts.js"
import { freshness, makeTestChain, milanReport, milanVcek, requestData, signedReport, teeKey } from "./support.js"

const now = new Date("2026-11-21T00:00:00Z")
const types = (v: { readonly failures: ReadonlyArray<{ readonly type: string }> }) => v.failures.map((f) => f.type)
const b64 = (b: Uint8Array) => Buffer.from(b).toString("base64")

const chain = makeTestChain()
const f = freshness()
const opts = { now, roots: chain.roots }
// with every RSA check answered (AMD's chain is RSA-PSS: the portable port asks WebCrypto)
const vTee = (...a: Parameters<typeof verifyTeeEvidence>) => settled(() => verifyTeeEvidence(...a))
const vSnp = (...a: Parameters<typeof verifySnpEvidence>) => settled(() => verifySnpEvidence(...a))
const verify = (report: Uint8Array, extra: Record<string, unknown> = {}, vcek: Uint8Array = chain.vcekDer) => verifyTeeEvidence(requestData(report, f, vcek, extra), opts)

eachCryptoPort("the real Milan report with AMD's chain", () => {
  it("verifies chain, TCB, chip id and signature with AMD's keys: only freshness fails (its report_data binds someone else's nonce)", async () => {
    const v = await vTee(requestData(milanReport(), f, milanVcek()), { now })
    expect(types(v)).toEqual([TEE_FAILURE.freshnessHashFailed])
    expect(v.valid).toBe(false)
    expect(v.claims).toEqual({})
  })

  it("is valid offline without a freshness binding, with Keylime's claims and attest's chip id, VMPL and product line", async () => {
    const r = await vSnp({ report: milanReport(), vcek: b64(milanVcek()), freshness: undefined, policy: undefined }, { now })
    expect(r.failures).toEqual([])
    expect(r.claims).toMatchObject({
      reported_tcb_bootloader: 3,
      reported_tcb_tee: 0,
      reported_tcb_snp: 8,
      reported_tcb_microcode: 115,
      platform_smt_enabled: true,
      platform_tsme_enabled: false,
      policy_abi_major: 0,
      policy_smt_allowed: true,
      policy_debug_allowed: false,
      policy_single_socket: false,
      vmpl: 0,
      product_line: "Milan"
    })
    expect(r.claims["chip_id"]).toMatch(/^d49554ec/)
    expect(r.claims["measurement"]).toHaveLength(48)
  })

  it("fails with tee_attestation.invalid_signature when bit 7 of report byte 21 is flipped (virtee's test)", async () => {
    const report = milanReport()
    report[21]! ^= 0x80
    const r = await vSnp({ report, vcek: b64(milanVcek()), freshness: undefined, policy: undefined }, { now })
    expect(types(r)).toEqual([TEE_FAILURE.invalidSignature])
  })

  it("fails with tee.vcek_chain when one bit of the VCEK's signature is flipped", async () => {
    const vcek = milanVcek()
    vcek[vcek.length - 10]! ^= 0x01
    const r = await vSnp({ report: milanReport(), vcek: b64(vcek), freshness: undefined, policy: undefined }, { now })
    expect(types(r)).toEqual([TEE_FAILURE.vcekChain])
  })

  it("never accepts the real report with any one bit flipped", async () => {
    const real = milanReport()
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: real.length * 8 - 1 }), async (bit) => {
        const report = new Uint8Array(real)
        report[bit >> 3]! ^= 1 << (bit & 7)
        const r = await vSnp({ report, vcek: b64(milanVcek()), freshness: undefined, policy: undefined }, { now })
        expect(r.failures.length).toBeGreaterThan(0)
      }),
      { numRuns: 300 }
    )
  })

  it("never accepts the real VCEK with any one bit flipped: the report fails with a typed failure", async () => {
    const real = milanVcek()
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: real.length * 8 - 1 }), async (bit) => {
        const vcek = new Uint8Array(real)
        vcek[bit >> 3]! ^= 1 << (bit & 7)
        const r = await vSnp({ report: milanReport(), vcek: b64(vcek), freshness: undefined, policy: undefined }, { now })
        expect(r.failures.length).toBeGreaterThan(0)
        for (const t of types(r)) expect(t).toMatch(/^tee_attestation\.(invalid_input|vcek_chain|tcb_mismatch|chip_id_mismatch|invalid_signature|invalid_public_key)$/)
      }),
      { numRuns: 200 }
    )
  })
})

eachCryptoPort("reports signed by a test chain", () => {
  it("is valid for a fresh report, with claims", () => {
    const v = verify(signedReport(chain, f))
    expect(v.failures).toEqual([])
    expect(v.valid).toBe(true)
    expect(v.claims["measurement"]).toEqual(new Array(48).fill(0x4d))
    expect(v.claims["report_data"]).toHaveLength(64)
  })

  it("fails freshness for another nonce or another TEE key; x and y swapped are no curve point", () => {
    const report = signedReport(chain, f)
    expect(types(verifyTeeEvidence(requestData(report, { ...f, nonce: new TextEncoder().encode("another") }, chain.vcekDer), opts))).toEqual([TEE_FAILURE.freshnessHashFailed])
    const other = teeKey()
    expect(types(verifyTeeEvidence(requestData(report, { ...f, ...other }, chain.vcekDer), opts))).toEqual([TEE_FAILURE.freshnessHashFailed])
    expect(types(verifyTeeEvidence(requestData(report, { ...f, x: f.y, y: f.x, xBytes: f.yBytes, yBytes: f.xBytes }, chain.vcekDer), opts))).toEqual([TEE_FAILURE.invalidPublicKey])
  })

  it("fails tee.tcb_mismatch when the report's reported_tcb is not the VCEK's, and tee.chip_id_mismatch for another chip (and a masked one)", () => {
    const tcb = verify(signedReport(chain, f, { reportedTcb: encodeTcb({ ...chain.tcb, snp: 9 }, "Milan") }))
    expect(types(tcb)).toEqual([TEE_FAILURE.tcbMismatch])
    expect(tcb.failures[0]!.context.message).toBe("the VCEK is for TCB bootloader=3 tee=0 snp=8 microcode=115, the report's reported_tcb is bootloader=3 tee=0 snp=9 microcode=115")
    expect(types(verify(signedReport(chain, f, { chipId: new Uint8Array(64).fill(7) })))).toEqual([TEE_FAILURE.chipIdMismatch])
    const masked = verify(signedReport(chain, f, { chipId: new Uint8Array(64) }))
    expect(masked.failures[0]!.context.message).toMatch(/chip_id is zero: the guest masks it/)
  })

  it("fails tee.vcek_chain for a VCEK of another chain (same chip and TCB), and reports the signature failure too", () => {
    const other = makeTestChain()
    expect(types(verify(signedReport(chain, f), {}, other.vcekDer))).toEqual([TEE_FAILURE.vcekChain, TEE_FAILURE.invalidSignature])
  })

  it("fails tee.invalid_public_key for a VCEK whose key is not P-384", () => {
    const p256 = makeTestChain({ vcekKeyKind: "ec-p256" })
    const report = signedReport({ ...p256, vcekKey: chain.vcekKey }, f)
    expect(types(verifyTeeEvidence(requestData(report, f, p256.vcekDer), { now, roots: p256.roots }))).toEqual([TEE_FAILURE.invalidPublicKey])
  })

  it("verifies a Turin chain, whose TCB has an FMC level and whose hwID is the first 8 bytes of the chip id", () => {
    const turin = makeTestChain({ product: "Turin" })
    const v = verifyTeeEvidence(requestData(signedReport(turin, f), f, turin.vcekDer), { now, roots: turin.roots })
    expect(v.failures).toEqual([])
    expect(v.claims).toMatchObject({ product_line: "Turin", reported_tcb_fmc: 1, reported_tcb_bootloader: 2, report_version: 5 })
  })

  it("refuses a report signed by a VLEK, saying attest verifies VCEK-signed reports", () => {
    const v = verify(signedReport(chain, f, { signingKey: 1 }))
    expect(types(v)).toEqual([TEE_FAILURE.invalidInput])
    expect(v.failures[0]!.context.message).toBe("the report is signed by a VLEK; attest verifies VCEK-signed reports")
  })

  it("refuses non-zero signature padding, so no byte of the report goes unchecked", () => {
    const report = signedReport(chain, f)
    report[0x2a0 + 60] = 1
    expect(types(verify(report))).toEqual([TEE_FAILURE.invalidSignature])
    const reserved = signedReport(chain, f)
    reserved[0x400] = 1
    expect(types(verify(reserved))).toEqual([TEE_FAILURE.invalidSignature])
  })
})

describe("snp_policy", () => {
  const measurement = "4d".repeat(48)
  it("passes a report that meets every rule", () => {
    const policy = { allowed_measurements: [measurement], minimum_tcb: { bootloader: 3, snp: 8, microcode: 100 }, allow_debug: false, allow_smt: false, require_single_socket: true }
    const report = signedReport(chain, f, { policy: 0x30000n | POLICY.singleSocket, platformInfo: 0n })
    expect(verify(report, { snp_policy: policy }).failures).toEqual([])
  })

  it("fails each violated rule once: measurement, minimum TCB, debug, SMT, single socket", () => {
    const report = signedReport(chain, f, { policy: 0x30000n | POLICY.debug, platformInfo: PLATFORM.smtEnabled })
    const policy = { allowed_measurements: ["00".repeat(48)], minimum_tcb: { snp: 9, microcode: 200, bootloader: 1 }, allow_smt: false, require_single_socket: true }
    const v = verify(report, { snp_policy: policy })
    expect(types(v)).toEqual(["tee_attestation.policy.measurement", "tee_attestation.policy.minimum_tcb", "tee_attestation.policy.debug", "tee_attestation.policy.smt", "tee_attestation.policy.single_socket"])
    expect(v.failures[1]!.context.message).toBe("reported TCB is below the minimum: snp 8 < 9, microcode 115 < 200")
  })

  it("tests each rule alone", () => {
    const cases: ReadonlyArray<[Record<string, unknown>, Parameters<typeof signedReport>[2], string]> = [
      [{ allowed_measurements: ["ab".repeat(48)] }, {}, "tee_attestation.policy.measurement"],
      [{ minimum_tcb: { tee: 1 } }, {}, "tee_attestation.policy.minimum_tcb"],
      [{}, { policy: 0x30000n | POLICY.debug }, "tee_attestation.policy.debug"],
      [{ allow_smt: false }, { platformInfo: PLATFORM.smtEnabled }, "tee_attestation.policy.smt"],
      [{ require_single_socket: true }, {}, "tee_attestation.policy.single_socket"]
    ]
    for (const [policy, fields, type] of cases) {
      expect(types(verify(signedReport(chain, f, fields), { snp_policy: policy }))).toEqual([type])
      expect(types(verify(signedReport(chain, f, fields)))).toEqual([])
    }
    expect(types(verify(signedReport(chain, f, { policy: 0x30000n | POLICY.debug }), { snp_policy: { allow_debug: true } }))).toEqual([])
  })

  it("refuses a policy that does not decode, naming the field", () => {
    const v = verify(signedReport(chain, f), { snp_policy: { minimum_tcb: { snp: 300 }, allowed_measurements: ["xyz"] } })
    expect(types(v)).toEqual([TEE_FAILURE.invalidInput])
    expect(v.failures[0]!.context["field"]).toBe("snp_policy")
    expect(v.failures[0]!.context.message).toMatch(/minimum_tcb\.snp/)
    expect(v.failures[0]!.context.message).toMatch(/allowed_measurements\.0/)
  })
})

describe("request checks", () => {
  it("reports every missing parameter as tee.missing_param naming it", () => {
    expect(verifyTeeEvidence({}, opts).failures.map((x) => x.context["param"])).toEqual(["nonce", "tee-pubkey-x-b64", "tee-pubkey-y-b64", "tee-evidence"])
    const data = requestData(signedReport(chain, f), f)
    const noReport = { ...data, "tee-evidence": { tee: "snp", evidence: { "snp-report": "" } } }
    expect(verifyTeeEvidence(noReport, opts).failures.map((x) => [x.type, x.context["param"]])).toEqual([[TEE_FAILURE.missingParam, "tee-evidence.evidence.snp-report"]])
    expect(types(verifyTeeEvidence({ ...data, "tee-evidence": { evidence: {} } }, opts))).toEqual([TEE_FAILURE.missingParam])
  })

  it("answers tee.invalid.tee for another TEE, and tee.invalid_input for data that is not an object or fields that are not base64", () => {
    const data = requestData(signedReport(chain, f), f)
    expect(types(verifyTeeEvidence({ ...data, "tee-evidence": { tee: "tdx", evidence: {} } }, opts))).toEqual([TEE_FAILURE.invalidTee])
    expect(types(verifyTeeEvidence([1, 2], opts))).toEqual([TEE_FAILURE.invalidInput])
    const bad = verifyTeeEvidence({ ...data, nonce: "%%%", "tee-pubkey-x-b64": "a+b/" }, opts)
    expect(bad.failures.map((x) => [x.type, x.context["field"]])).toEqual([[TEE_FAILURE.invalidInput, "nonce"], [TEE_FAILURE.invalidInput, "tee-pubkey-x-b64"]])
    const notString = verifyTeeEvidence({ ...data, "tee-evidence": { tee: "snp", evidence: { "snp-report": 5 } } }, opts)
    expect(notString.failures[0]!.context.message).toBe("tee-evidence.evidence.snp-report must be a string")
  })

  it("answers tee.invalid_public_key for coordinates that are not a point of a NIST curve", () => {
    const data = requestData(signedReport(chain, f), f)
    const y = Buffer.from(f.yBytes)
    y[10]! ^= 1
    expect(types(verifyTeeEvidence({ ...data, "tee-pubkey-y-b64": y.toString("base64url") }, opts))).toEqual([TEE_FAILURE.invalidPublicKey])
    expect(types(verifyTeeEvidence({ ...data, "tee-pubkey-y-b64": "AAAA" }, opts))).toEqual([TEE_FAILURE.invalidPublicKey])
    const p256 = teeKey("P-256")
    const fresh = { ...f, ...p256 }
    expect(verifyTeeEvidence(requestData(signedReport(chain, fresh), fresh, chain.vcekDer), opts).failures).toEqual([])
  })

  it("turns any JSON value, and a request with any field replaced, into an invalid verdict with typed failures, never an exception", () => {
    const data = requestData(signedReport(chain, f), f, chain.vcekDer)
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const v = verifyTeeEvidence(value, opts)
        expect(v.valid).toBe(false)
        for (const t of types(v)) expect(t).toMatch(/^tee_attestation\./)
      }),
      { numRuns: 200 }
    )
    const paths = ["nonce", "tee-pubkey-x-b64", "tee-pubkey-y-b64", "tee-evidence", "snp_policy"] as const
    fc.assert(
      fc.property(fc.constantFrom(...paths), fc.jsonValue(), (path, value) => {
        const v = verifyTeeEvidence({ ...data, [path]: value }, opts)
        for (const t of types(v)) expect(t).toMatch(/^tee_attestation\./)
        if (path !== "snp_policy") expect(v.valid).toBe(false)
      }),
      { numRuns: 300 }
    )
  })

  it("refuses a report of the wrong size as tee.invalid_input naming the report field and offset", () => {
    const v = verify(signedReport(chain, f).subarray(0, 0x200))
    expect(v.failures).toEqual([{ type: TEE_FAILURE.invalidInput, context: { field: "snp-report", report_field: "report", offset: 0x200, message: expect.stringMatching(/is 512 bytes/) } }])
  })
})

describe("VCEK sources and the chain cache", () => {
  it("takes the VCEK from snp_vcek_dir when the evidence has none, and says so when neither has it", () => {
    const dir = vcekDirectoryOf([Either.getOrThrow(vcekEntry("vcek.der", chain.vcekDer))])
    const data = requestData(signedReport(chain, f), f)
    expect(verifyTeeEvidence(data, { ...opts, vcekDir: dir }).failures).toEqual([])
    const none = verifyTeeEvidence(data, opts)
    expect(types(none)).toEqual([TEE_FAILURE.vcekNotFound])
    expect(none.failures[0]!.context.message).toBe("the evidence has no vcek and no snp_vcek_dir is configured")
    const otherTcb = verifyTeeEvidence(requestData(signedReport(chain, f, { reportedTcb: encodeTcb({ ...chain.tcb, snp: 1 }, "Milan") }), f), { ...opts, vcekDir: dir })
    expect(types(otherTcb)).toEqual([TEE_FAILURE.vcekNotFound])
  })

  it("verifies each VCEK's chain once, then only compares the time with the cached validity window", () => {
    const cache = makeChainCache()
    const report = signedReport(chain, f)
    expect(verify(report, {}, chain.vcekDer).valid).toBe(true)
    expect(verifyTeeEvidence(requestData(report, f, chain.vcekDer), { ...opts, chainCache: cache }).valid).toBe(true)
    expect(cache.size()).toBe(1)
    const later = verifyTeeEvidence(requestData(report, f, chain.vcekDer), { ...opts, chainCache: cache, now: new Date("2050-01-01T00:00:00Z") })
    expect(types(later)).toEqual([TEE_FAILURE.vcekChain])
    expect(later.failures[0]!.context.message).toMatch(/^the chain ARK → ASK → VCEK is valid from 2024-01-01T00:00:00.000Z to 2049-01-01T00:00:00.000Z, not at 2050/)
    // A cache entry made with other roots is not trusted for these.
    expect(types(verifyTeeEvidence(requestData(report, f, chain.vcekDer), { now, chainCache: cache }))).toEqual([TEE_FAILURE.vcekChain])
  })

  it("bounds the cache, dropping the least recently used VCEK", () => {
    const cache = makeChainCache(2)
    const chains = [makeTestChain(), makeTestChain(), makeTestChain()]
    for (const c of chains) verifyTeeEvidence(requestData(signedReport(c, f), f, c.vcekDer), { now, roots: c.roots, chainCache: cache })
    expect(cache.size()).toBe(2)
    expect(cache.get(b64(chains[0]!.vcekDer))).toBeUndefined()
    expect(cache.get(b64(chains[2]!.vcekDer))?.vcek.product).toBe("Milan")
  })
})
