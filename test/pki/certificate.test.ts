import { describe, expect, it } from "@effect/vitest"
import { Either, FastCheck } from "effect"
import { execFileSync } from "node:child_process"
import * as crypto from "node:crypto"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import {
  EKU,
  fromPem,
  generateKeyPair,
  issueCertificate,
  tcgDirectoryName,
  toPem
} from "../../src/pki/certificate.js"

const notBefore = new Date("2026-01-01T00:00:00Z")
const notAfter = new Date("2036-01-01T00:00:00Z")

const hasOpenssl = (() => {
  try {
    execFileSync("openssl", ["version"], { stdio: "ignore" })
    return true
  } catch {
    return false
  }
})()

const opensslText = (der: Uint8Array): string => {
  const dir = mkdtempSync(join(tmpdir(), "attest-pki-"))
  const file = join(dir, "c.der")
  writeFileSync(file, der)
  return execFileSync("openssl", ["x509", "-inform", "DER", "-in", file, "-noout", "-text"], { encoding: "utf8" })
}

const rootOf = (kind: "rsa2048" | "ec-p256" | "ec-p384") => {
  const keys = generateKeyPair(kind)
  const der = Either.getOrThrow(issueCertificate({
    subject: { CN: `root ${kind}`, O: "attest test" },
    publicKey: keys.publicKey,
    signingKey: keys.privateKey,
    notBefore,
    notAfter,
    basicConstraints: { ca: true, pathLen: 1 },
    keyUsage: ["keyCertSign", "cRLSign"]
  }))
  return { keys, der }
}

describe("issueCertificate", () => {
  for (const kind of ["rsa2048", "ec-p256", "ec-p384"] as const) {
    it(`issues a self-signed ${kind} CA that node parses and verifies`, () => {
      const { der, keys } = rootOf(kind)
      const x = new crypto.X509Certificate(der)
      expect(x.subject).toBe(`O=attest test\nCN=root ${kind}`) // one attribute per RDN
      expect(x.ca).toBe(true)
      expect(x.verify(keys.publicKey)).toBe(true)
      expect(x.checkIssued(x)).toBe(true)
      if (hasOpenssl) {
        const text = opensslText(der)
        expect(text).toContain("CA:TRUE, pathlen:1")
        expect(text).toContain("Certificate Sign, CRL Sign")
        expect(text).toContain(kind === "rsa2048" ? "sha256WithRSAEncryption" : kind === "ec-p384" ? "ecdsa-with-SHA384" : "ecdsa-with-SHA256")
      }
    })
  }

  it("issues a server certificate whose EKU, key usage and SAN read back", () => {
    const root = rootOf("ec-p256")
    const leaf = generateKeyPair("rsa2048")
    const der = Either.getOrThrow(issueCertificate({
      subject: { CN: "verifier" },
      publicKey: leaf.publicKey,
      issuer: { certificate: root.der, privateKey: root.keys.privateKey },
      notBefore,
      notAfter,
      basicConstraints: { ca: false },
      keyUsage: ["digitalSignature", "keyEncipherment"],
      extendedKeyUsage: [EKU.serverAuth],
      subjectAltName: { dns: ["localhost", "verifier.example"], ip: ["127.0.0.1", "::1"] },
      serial: 0x1234n
    }))
    const x = new crypto.X509Certificate(der)
    const rootX = new crypto.X509Certificate(root.der)
    expect(x.verify(root.keys.publicKey)).toBe(true)
    expect(x.checkIssued(rootX)).toBe(true)
    expect(x.issuer).toBe(rootX.subject)
    expect(x.serialNumber).toBe("1234")
    expect(x.keyUsage).toEqual([EKU.serverAuth])
    expect(x.subjectAltName).toContain("DNS:verifier.example")
    expect(x.subjectAltName).toContain("IP Address:127.0.0.1")
    expect(x.subjectAltName).toContain("IP Address:0:0:0:0:0:0:0:1")
    expect(x.checkIP("127.0.0.1")).toBe("127.0.0.1")
    expect(x.ca).toBe(false)
    if (hasOpenssl) {
      const text = opensslText(der)
      expect(text).toContain("Digital Signature, Key Encipherment")
      expect(text).toContain("TLS Web Server Authentication")
      expect(text).toContain("X509v3 Authority Key Identifier")
    }
  })

  it("issues an EK-style certificate with a critical directoryName SAN and the TCG EKU", () => {
    const root = rootOf("rsa2048")
    const ek = generateKeyPair("ec-p256")
    const der = Either.getOrThrow(issueCertificate({
      subject: {},
      publicKey: ek.publicKey,
      issuer: { certificate: root.der, privateKey: root.keys.privateKey },
      notBefore,
      notAfter,
      basicConstraints: { ca: false },
      keyUsage: ["keyAgreement"],
      extendedKeyUsage: [EKU.tcgEkCertificate],
      subjectAltName: {
        directoryName: tcgDirectoryName({ manufacturer: "id:49424D00", model: "swtpm", version: "id:20191023" }),
        critical: true
      }
    }))
    const x = new crypto.X509Certificate(der)
    expect(x.verify(root.keys.publicKey)).toBe(true)
    expect(x.keyUsage).toEqual([EKU.tcgEkCertificate])
    if (hasOpenssl) {
      const text = opensslText(der)
      expect(text).toMatch(/X509v3 Subject Alternative Name: critical\s+DirName:.*2\.23\.133\.2\.1\s*=\s*id:49424D00/)
    }
  })

  it("rejects an issuer key that does not match the issuer certificate", () => {
    const root = rootOf("ec-p256")
    const other = generateKeyPair("ec-p256")
    const r = issueCertificate({
      subject: { CN: "x" },
      publicKey: other.publicKey,
      issuer: { certificate: root.der, privateKey: other.privateKey },
      notBefore,
      notAfter
    })
    expect(Either.isLeft(r) && r.left.reason).toBe("issuer private key does not match the issuer certificate")
  })

  it("rejects a non-positive serial and an empty validity window", () => {
    const k = generateKeyPair("ec-p256")
    const base = { subject: { CN: "x" }, publicKey: k.publicKey, signingKey: k.privateKey, notBefore, notAfter }
    expect(Either.isLeft(issueCertificate({ ...base, serial: 0n }))).toBe(true)
    expect(Either.isLeft(issueCertificate({ ...base, notAfter: notBefore }))).toBe(true)
  })

  it("rejects garbage as the issuer certificate with a typed error", () => {
    const k = generateKeyPair("ec-p256")
    FastCheck.assert(FastCheck.property(FastCheck.uint8Array({ maxLength: 64 }), (bytes) => {
      const r = issueCertificate({
        subject: { CN: "x" },
        publicKey: k.publicKey,
        issuer: { certificate: bytes, privateKey: k.privateKey },
        notBefore,
        notAfter
      })
      return Either.isLeft(r) && r.left._tag === "PkiError"
    }), { numRuns: 50 })
  })

  it("keeps random positive serials as given", () => {
    const k = generateKeyPair("ec-p256")
    FastCheck.assert(FastCheck.property(FastCheck.bigInt({ min: 1n, max: (1n << 159n) - 1n }), (serial) => {
      const der = Either.getOrThrow(issueCertificate({
        subject: { CN: "s" }, publicKey: k.publicKey, signingKey: k.privateKey, notBefore, notAfter, serial
      }))
      return BigInt("0x" + new crypto.X509Certificate(der).serialNumber) === serial
    }), { numRuns: 25 })
  })
})

describe("PEM", () => {
  it("round-trips any bytes through toPem/fromPem, several blocks per text", () => {
    FastCheck.assert(FastCheck.property(
      FastCheck.array(FastCheck.uint8Array({ minLength: 1, maxLength: 300 }), { minLength: 1, maxLength: 4 }),
      (blocks) => {
        const text = blocks.map((b, i) => `junk ${i}\n` + toPem(b, i % 2 ? "PRIVATE KEY" : "CERTIFICATE")).join("")
        const back = fromPem(text)
        return back.length === blocks.length &&
          back.every((b, i) => Buffer.from(b.der).equals(Buffer.from(blocks[i]!)) && b.label === (i % 2 ? "PRIVATE KEY" : "CERTIFICATE"))
      }
    ))
  })

  it("finds no certificate in text without PEM blocks or with a corrupted body", () => {
    expect(fromPem("hello")).toEqual([])
    expect(fromPem("-----BEGIN CERTIFICATE-----\n%%%\n-----END CERTIFICATE-----\n")).toEqual([])
  })

  it("produces PEM node accepts as a certificate", () => {
    const { der } = rootOf("ec-p256")
    expect(new crypto.X509Certificate(toPem(der)).raw.equals(Buffer.from(der))).toBe(true)
  })
})
