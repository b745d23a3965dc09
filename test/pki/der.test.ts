import { describe, expect, it } from "@effect/vitest"
import { Either, FastCheck } from "effect"
import { generateKeyPair, issueCertificate, keyIdentifier } from "../../src/pki/certificate.js"
import { certificateFields, oidToString, pathLenConstraint, subjectKeyIdentifier } from "../../src/crypto/der.js"
import { spkiDer } from "../../src/pki/keys.js"
import { readVector } from "../support/vectors.js"

const ek = readVector("tpm", "ek", "ek_rsa_cert.der")

describe("DER certificate fields", () => {
  it("reads the swtpm EK certificate's extensions, including the critical SAN and the TCG EKU", () => {
    const f = Either.getOrThrow(certificateFields(ek))
    expect(f.extensions.get("2.5.29.17")?.critical).toBe(true)
    expect(f.extensions.get("2.5.29.37")?.critical).toBe(false)
    expect(Buffer.from(f.extensions.get("2.5.29.37")!.value).toString("hex")).toContain("0605678105080")
    expect(f.issuer[0]).toBe(0x30)
  })

  it("reads pathLen and the subject key identifier back as issued", () => {
    const k = generateKeyPair("ec-p256")
    for (const pathLen of [0, 1, 7, 300]) {
      const der = Either.getOrThrow(issueCertificate({
        subject: { CN: "ca" }, publicKey: k.publicKey, signingKey: k.privateKey,
        notBefore: new Date("2026-01-01"), notAfter: new Date("2027-01-01"), basicConstraints: { ca: true, pathLen }
      }))
      expect(Either.getOrThrow(pathLenConstraint(der))).toBe(pathLen)
      expect(Either.getOrThrow(subjectKeyIdentifier(der))).toEqual(Either.getOrThrow(keyIdentifier(spkiDer(k.publicKey))))
    }
    expect(Either.getOrThrow(pathLenConstraint(ek))).toBeUndefined()
  })

  it("decodes OIDs", () => {
    expect(oidToString(new Uint8Array([0x67, 0x81, 0x05, 0x08, 0x01]))).toBe("2.23.133.8.1")
    expect(oidToString(new Uint8Array([0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0b]))).toBe("1.2.840.113549.1.1.11")
  })

  it("answers every truncation, byte flip and random input with a value or a typed error, never an exception", () => {
    FastCheck.assert(FastCheck.property(
      FastCheck.nat({ max: ek.length - 1 }), FastCheck.integer({ min: 1, max: 255 }), FastCheck.uint8Array({ maxLength: 64 }),
      (at, xor, random) => {
        const flipped = ek.slice()
        flipped[at] = flipped[at]! ^ xor
        for (const input of [ek.slice(0, at), flipped, random]) {
          const results: ReadonlyArray<Either.Either<unknown, { _tag: string }>> = [
            certificateFields(input), pathLenConstraint(input), subjectKeyIdentifier(input)
          ]
          if (results.some((r) => Either.isLeft(r) && r.left._tag !== "PkiError")) return false
        }
        return Either.isLeft(certificateFields(ek.slice(0, at)))
      }
    ), { numRuns: 400 })
  })
})
