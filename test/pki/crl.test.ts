import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, FastCheck as fc } from "effect"
import { execFileSync, spawnSync } from "node:child_process"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { initCa, loadCa, type LoadedCa } from "../../src/pki/ca.js"
import { toPem } from "../../src/pki/certificate.js"
import { issueCrl, loadVerifiedCrl, normalizeSerial, parseCrl, verifyCrl } from "../../src/pki/crl.js"
import { PkiError } from "../../src/crypto/pkiError.js"

const newCa = (keyKind?: "ec-p256"): LoadedCa => {
  const dir = join(mkdtempSync(join(tmpdir(), "attest-crl-")), "cv_ca")
  Effect.runSync(Effect.orDie(initCa({ dir, ...(keyKind ? { keyKind } : {}) })))
  return Effect.runSync(Effect.orDie(loadCa(dir)))
}
const ca = newCa()
const ecCa = newCa("ec-p256")
const t0 = new Date("2030-01-02T03:04:05Z")
const revoked = [
  { serial: "4A0B", revokedAt: new Date("2030-01-01T00:00:00Z") },
  { serial: "00ff", revokedAt: new Date("2030-01-02T00:00:00Z") }
]
const crlOf = (c: LoadedCa, number = 7n) =>
  Either.getOrThrow(issueCrl({
    issuer: { certificate: c.certificate, privateKey: c.privateKey },
    thisUpdate: t0,
    nextUpdate: new Date(t0.getTime() + 86_400_000),
    revoked,
    crlNumber: number
  }))
const der = crlOf(ca)
const hasOpenssl = spawnSync("openssl", ["version"]).status === 0

describe("certificate revocation lists", () => {
  it("round-trips: issued, parsed from DER and PEM, verified with the CA", () => {
    for (const bytes of [der, new TextEncoder().encode(toPem(der, "X509 CRL"))]) {
      const crl = Either.getOrThrow(loadVerifiedCrl(bytes, ca.certificate))
      expect(crl.crlNumber).toBe(7n)
      expect(crl.thisUpdate).toEqual(t0)
      expect(crl.nextUpdate).toEqual(new Date(t0.getTime() + 86_400_000))
      expect(crl.revoked).toEqual([
        { serial: "4A0B", revokedAt: revoked[0]!.revokedAt },
        { serial: "FF", revokedAt: revoked[1]!.revokedAt }
      ])
    }
  })

  it("signs with an EC CA key too", () => {
    expect(Either.isRight(loadVerifiedCrl(crlOf(ecCa), ecCa.certificate))).toBe(true)
  })

  it("omits revokedCertificates when nothing is revoked", () => {
    const empty = Either.getOrThrow(issueCrl({
      issuer: { certificate: ca.certificate, privateKey: ca.privateKey },
      thisUpdate: t0,
      nextUpdate: new Date(t0.getTime() + 1000),
      revoked: [],
      crlNumber: 1n
    }))
    expect(Either.getOrThrow(loadVerifiedCrl(empty, ca.certificate)).revoked).toEqual([])
  })

  it.skipIf(!hasOpenssl)("openssl reads it and verifies its signature with the CA certificate", () => {
    const dir = mkdtempSync(join(tmpdir(), "attest-crl-ossl-"))
    writeFileSync(join(dir, "crl.der"), der)
    writeFileSync(join(dir, "ca.pem"), ca.certificatePem)
    const text = execFileSync("openssl", ["crl", "-text", "-noout", "-inform", "DER", "-in", join(dir, "crl.der")]).toString()
    expect(text).toContain("Version 2")
    expect(text).toMatch(/CRL Number:\s*\n\s*7/)
    expect(text).toContain("Serial Number: 4A0B")
    expect(text).toContain("Serial Number: FF")
    const verified = spawnSync("openssl", ["crl", "-noout", "-inform", "DER", "-in", join(dir, "crl.der"), "-CAfile", join(dir, "ca.pem")])
    expect(verified.stderr.toString() + verified.stdout.toString()).toContain("verify OK")
  })

  it("refuses a CRL signed by another CA, and one whose issuer name is another CA's", () => {
    const foreign = crlOf(newCa())
    const r = loadVerifiedCrl(foreign, ca.certificate)
    expect(Either.isLeft(r) && r.left.reason).toMatch(/issuer is not the CA|does not verify/)
    // same issuer name bytes, other key: only the signature can tell
    const parsed = Either.getOrThrow(parseCrl(foreign))
    const forged = verifyCrl({ ...parsed, issuer: Either.getOrThrow(parseCrl(der)).issuer }, ca.certificate)
    expect(Either.isLeft(forged) && forged.left.reason).toBe("CRL: signature does not verify with the CA certificate")
  })

  it("refuses trailing bytes and PEM text without a CRL block", () => {
    expect(Either.isLeft(parseCrl(new Uint8Array([...der, 0])))).toBe(true)
    expect(Either.isLeft(parseCrl(new TextEncoder().encode(ca.certificatePem)))).toBe(true)
  })

  it("refuses every truncation with a typed error", () => {
    fc.assert(fc.property(fc.integer({ min: 0, max: der.length - 1 }), (n) => {
      const r = loadVerifiedCrl(der.slice(0, n), ca.certificate)
      return Either.isLeft(r) && r.left instanceof PkiError
    }), { numRuns: 300 })
  })

  it("refuses every single-byte change with a typed error, never a false acceptance", () => {
    fc.assert(fc.property(fc.integer({ min: 0, max: der.length - 1 }), fc.integer({ min: 1, max: 255 }), (at, x) => {
      const bad = der.slice()
      bad[at] = bad[at]! ^ x
      const r = loadVerifiedCrl(bad, ca.certificate)
      return Either.isLeft(r) && r.left instanceof PkiError
    }), { numRuns: 500 })
  })

  it("normalises serials as node prints them", () => {
    expect(normalizeSerial("00:4a:0b")).toBe("4A0B")
    expect(normalizeSerial("0")).toBe("0")
  })
})
