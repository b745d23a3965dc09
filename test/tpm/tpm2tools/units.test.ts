/** The pure parts of the tpm2-tools layer, against the swtpm vectors. */
import { describe, expect, it } from "@effect/vitest"
import { Either, FastCheck as fc } from "effect"
import { Writer } from "../../../src/tpm/bytes.js"
import { certifyCommand, parseCertifyResponse } from "../../../src/tpm/tpm2tools/certifyCommand.js"
import { trimDer } from "../../../src/tpm/tpm2tools/nv.js"
import { parsePcrReadYaml, selectionArg } from "../../../src/tpm/tpm2tools/pcrReadOutput.js"
import { readVector, readVectorText } from "../../support/vectors.js"

const nonces = readVectorText("tpm", "quotes", "nonces.txt").trim().split(/\s+/)
const ascii = (s: string) => new Uint8Array(Buffer.from(s, "ascii"))

/** A TPM2_Certify success response around an attest and a signature, as swtpm sends it. */
const response = (attest: Uint8Array, signature: Uint8Array): Uint8Array => {
  const params = new Writer().tpm2b(attest).bytes(signature).finish()
  const sessions = new Uint8Array([0, 0, 0x01, 0, 0, 0, 0, 0, 0, 0x01, 0, 0])
  const body = new Writer().u32(0).u32(params.length).bytes(params).bytes(sessions).finish()
  return new Writer().u16(0x8002).u32(body.length + 6).bytes(body).finish()
}

describe("raw TPM2_Certify", () => {
  it("builds the exact command bytes that made the RSA and ECC certify vectors", () => {
    expect(certifyCommand(0x81000100, 0x81000100, ascii(nonces[0]!))).toEqual(readVector("tpm", "certify", "certify_cmd_rsa.bin"))
    expect(certifyCommand(0x81000101, 0x81000101, ascii(nonces[2]!))).toEqual(readVector("tpm", "certify", "certify_cmd_ecc.bin"))
  })

  it("splits a response into the attest and the signature", () => {
    const attest = readVector("tpm", "certify", "certify_rsa_pop.attest")
    const sig = readVector("tpm", "certify", "certify_rsa_pop.sig")
    const r = Either.getOrThrow(parseCertifyResponse(response(attest, sig)))
    expect(r).toEqual({ _tag: "Ok", attest, signature: sig })
  })

  it("reports a TPM error code instead of parsing parameters", () => {
    const rsp = new Writer().u16(0x8001).u32(10).u32(0x18b).finish()
    expect(Either.getOrThrow(parseCertifyResponse(rsp))).toEqual({ _tag: "TpmRc", rc: 0x18b })
  })

  it("ends every truncation or byte flip of a response in a value, never an exception", () => {
    const full = response(readVector("tpm", "certify", "certify_ecc_pop.attest"), readVector("tpm", "certify", "certify_ecc_pop.sig"))
    fc.assert(
      fc.property(fc.nat({ max: full.length - 1 }), fc.nat({ max: full.length - 1 }), fc.integer({ min: 1, max: 255 }), (cut, at, xor) => {
        const truncated = parseCertifyResponse(full.subarray(0, cut))
        expect(Either.isLeft(truncated)).toBe(true)
        const flipped = full.slice()
        flipped[at] = flipped[at]! ^ xor
        const r = parseCertifyResponse(flipped)
        // A damaged header (tag, size, response code) is never taken for a success; damage past it
        // can only change the attest/signature bytes, which verification then rejects.
        if (at < 10) expect(Either.isRight(r) && r.right._tag === "Ok").toBe(false)
      }),
      { numRuns: 500 }
    )
  })
})

describe("tpm2_pcrread output", () => {
  it("decodes the YAML of a real run into the selected PCRs", () => {
    const text = readVectorText("tpm", "quotes", "pcrread_final.yaml")
    const sel = [{ hash: "sha256" as const, pcrs: [16, 10] }, { hash: "sha1" as const, pcrs: [0] }]
    const v = Either.getOrThrow(parsePcrReadYaml(text, sel))
    expect(v.map((b) => b.hash)).toEqual(["sha256", "sha1"])
    expect([...v[0]!.values.keys()]).toEqual([10, 16])
    expect(Buffer.from(v[0]!.values.get(10)!).toString("hex")).toBe("3e3a5b719943a50ff11799ba76be2c80218f2c4dd13474f11b5f66ea85a6f212")
    expect(Buffer.from(v[1]!.values.get(0)!).toString("hex")).toBe("0f2d3a2a1adaa479aeeca8f5df76aadc41b862ea")
  })

  it("rejects output that lacks a selected PCR or has a short digest", () => {
    const text = readVectorText("tpm", "quotes", "pcrread_final.yaml")
    expect(Either.isLeft(parsePcrReadYaml(text, [{ hash: "sha256", pcrs: [23] }]))).toBe(true)
    expect(Either.isLeft(parsePcrReadYaml("  sha1:\n    0 : 0x00\n", [{ hash: "sha1", pcrs: [0] }]))).toBe(true)
    expect(Either.isLeft(parsePcrReadYaml("garbage\n", []))).toBe(true)
  })

  it("spells selections the way tpm2-tools takes them", () => {
    expect(selectionArg([{ hash: "sha1", pcrs: [16, 0, 1] }, { hash: "sha256", pcrs: [10] }])).toBe("sha1:0,1,16+sha256:10")
  })
})

describe("EK certificate bytes from NV", () => {
  it("drops the zero padding after the DER certificate", () => {
    const der = readVector("tpm", "ek", "ek_rsa_cert.der")
    const padded = new Uint8Array(der.length + 100)
    padded.set(der)
    expect(trimDer(padded)).toEqual(der)
    expect(trimDer(der)).toEqual(der)
  })
})
