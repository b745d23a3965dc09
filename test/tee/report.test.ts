import { describe, expect, it } from "@effect/vitest"
import { Either, FastCheck as fc } from "effect"
import { encodeSnpReport, parseSnpReport, SNP_REPORT_SIZE, SNP_REPORT_VERSIONS } from "../../src/tee/snp/report.js"
import { p1363Signature } from "../../src/tee/snp/signature.js"
import { decodeTcb, encodeTcb, PRODUCT_LINES } from "../../src/tee/snp/tcb.js"
import { milanReport } from "./support.js"

const hex = (b: Uint8Array) => Buffer.from(b).toString("hex")
const isTypedError = (r: ReturnType<typeof parseSnpReport>) => Either.isRight(r) || (r.left._tag === "SnpReportError" && r.left.offset >= 0 && r.left.offset <= SNP_REPORT_SIZE)

describe("SEV-SNP attestation report", () => {
  it("reads the real Milan report's fields at their ABI offsets", () => {
    const r = Either.getOrThrow(parseSnpReport(milanReport()))
    expect({ version: r.version, vmpl: r.vmpl, algo: r.signatureAlgo, policy: r.policy, platform: r.platformInfo, signingKey: r.signingKey, cpuid: r.cpuid }).toEqual({
      version: 2,
      vmpl: 0,
      algo: 1,
      policy: 0x30000n,
      platform: 1n,
      signingKey: 0,
      cpuid: undefined
    })
    expect(hex(r.reportedTcb)).toBe("0300000000000873")
    expect(decodeTcb(r.reportedTcb, "Milan")).toEqual({ bootloader: 3, tee: 0, snp: 8, microcode: 115 })
    expect(hex(r.chipId)).toMatch(/^d49554ec717f4e5b/)
    expect(hex(r.reportData)).toMatch(/^d447b55d/)
    expect(r.measurement).toHaveLength(48)
    expect(p1363Signature(r)).toHaveLength(96)
  })

  it("refuses a report of the wrong length, an unknown version and another signature algorithm, naming the field and offset", () => {
    const short = parseSnpReport(milanReport().subarray(0, 0x188))
    expect(Either.isLeft(short) && { f: short.left.field, o: short.left.offset }).toEqual({ f: "report", o: 0x188 })
    expect(Either.isLeft(short) && short.left.message).toBe("SNP report is 392 bytes, an SNP attestation report is 1184 (0x4A0)")
    const v9 = milanReport()
    v9[0] = 9
    const r1 = parseSnpReport(v9)
    expect(Either.isLeft(r1) && { f: r1.left.field, o: r1.left.offset }).toEqual({ f: "version", o: 0 })
    const algo = milanReport()
    algo[0x34] = 2
    const r2 = parseSnpReport(algo)
    expect(Either.isLeft(r2) && { f: r2.left.field, o: r2.left.offset }).toEqual({ f: "signature_algo", o: 0x34 })
  })

  it("reads the CPUID identification of version 3 and later reports", () => {
    const r = Either.getOrThrow(parseSnpReport(encodeSnpReport({ version: 3, cpuid: { family: 0x19, model: 0x11, stepping: 1 } })))
    expect(r.cpuid).toEqual({ family: 0x19, model: 0x11, stepping: 1 })
  })
})

const bytes = (n: number) => fc.uint8Array({ minLength: n, maxLength: n })
const fieldsArb = fc.record({
  version: fc.constantFrom(...SNP_REPORT_VERSIONS),
  guestSvn: fc.nat(),
  policy: fc.bigUintN(64),
  vmpl: fc.integer({ min: 0, max: 3 }),
  platformInfo: fc.bigUintN(64),
  signingKey: fc.integer({ min: 0, max: 7 }),
  familyId: bytes(16),
  reportData: bytes(64),
  measurement: bytes(48),
  hostData: bytes(32),
  reportedTcb: bytes(8),
  chipId: bytes(64),
  signatureR: bytes(72),
  signatureS: bytes(72)
})

describe("SEV-SNP report codec properties", () => {
  it("round-trips random reports field by field", () => {
    fc.assert(
      fc.property(fieldsArb, (f) => {
        const r = Either.getOrThrow(parseSnpReport(encodeSnpReport(f)))
        expect([r.version, r.guestSvn, r.policy, r.vmpl, r.platformInfo, r.signingKey]).toEqual([f.version, f.guestSvn, f.policy, f.vmpl, f.platformInfo, f.signingKey])
        expect([r.familyId, r.reportData, r.measurement, r.hostData, r.reportedTcb, r.chipId, r.signatureR, r.signatureS].map(hex)).toEqual(
          [f.familyId, f.reportData, f.measurement, f.hostData, f.reportedTcb, f.chipId, f.signatureR, f.signatureS].map(hex)
        )
      }),
      { numRuns: 200 }
    )
  })

  it("turns every truncation or extension of the real report into a typed length error", () => {
    const real = milanReport()
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2 * SNP_REPORT_SIZE }).filter((n) => n !== SNP_REPORT_SIZE), (n) => {
        const b = new Uint8Array(n)
        b.set(real.subarray(0, Math.min(n, real.length)))
        const r = parseSnpReport(b)
        expect(Either.isLeft(r) && r.left.field).toBe("report")
      }),
      { numRuns: 300 }
    )
  })

  it("turns random bytes and random mutations of the real report into a typed error or a report, never an exception", () => {
    const real = milanReport()
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 1300 }), (b) => {
        expect(isTypedError(parseSnpReport(b))).toBe(true)
      }),
      { numRuns: 300 }
    )
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.integer({ min: 0, max: SNP_REPORT_SIZE - 1 }), fc.integer({ min: 1, max: 255 })), { minLength: 1, maxLength: 8 }), (flips) => {
        const b = new Uint8Array(real)
        for (const [at, mask] of flips) b[at]! ^= mask
        const r = parseSnpReport(b)
        expect(isTypedError(r)).toBe(true)
        if (Either.isLeft(r)) expect(["version", "signature_algo"]).toContain(r.left.field)
      }),
      { numRuns: 300 }
    )
  })

  it("round-trips TCB parts in every product line's layout", () => {
    fc.assert(
      fc.property(fc.constantFrom(...PRODUCT_LINES), fc.array(fc.integer({ min: 0, max: 255 }), { minLength: 5, maxLength: 5 }), (product, [a, b, c, d, e]) => {
        const parts = { bootloader: a!, tee: b!, snp: c!, microcode: d!, ...(product === "Turin" ? { fmc: e! } : {}) }
        expect(decodeTcb(encodeTcb(parts, product), product)).toEqual(parts)
      }),
      { numRuns: 100 }
    )
  })
})
