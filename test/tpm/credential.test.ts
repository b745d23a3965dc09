import { createHash, createHmac, generateKeyPairSync, randomBytes } from "node:crypto"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import { kdfa, kdfe, parseTpm2bPublic, marshalTpm2bPublic, nameOf } from "../../src/tpm/index.js"
import { activateCredentialWithKey, decodeCredentialFile, ekPublicFromKey, encodeCredentialFile, makeCredential } from "../../src/tpm/node.js"
import { readVector } from "../support/vectors.js"
import { makeAk } from "./quoteFixture.js"

const right = <A, E>(e: Either.Either<A, E>): A => {
  if (Either.isLeft(e)) throw new Error(`expected Right, got ${JSON.stringify(e.left)}`)
  return e.right
}

describe("KDFa / KDFe", () => {
  it("KDFa's first block is HMAC(key, [1] ‖ label ‖ 00 ‖ U ‖ V ‖ [bits]) and the label NUL is not doubled", () => {
    const key = new Uint8Array(32).fill(1)
    const u = Uint8Array.of(1, 2, 3)
    const expected = createHmac("sha256", key)
      .update(Buffer.from("0000000153544f5241474500", "hex"))
      .update(u)
      .update(Buffer.from("00000080", "hex"))
      .digest()
      .subarray(0, 16)
    expect(Buffer.from(kdfa("sha256", key, "STORAGE", u, new Uint8Array(0), 128)).equals(expected)).toBe(true)
    expect(kdfa("sha256", key, "STORAGE\0", u, new Uint8Array(0), 128)).toEqual(kdfa("sha256", key, "STORAGE", u, new Uint8Array(0), 128))
  })
  it("KDFa produces the asked length across several blocks, with the bit count bound into each block", () => {
    const k = new Uint8Array(20)
    const long = kdfa("sha1", k, "INTEGRITY", new Uint8Array(0), new Uint8Array(0), 512)
    expect(long.length).toBe(64)
    expect(long.subarray(0, 20)).not.toEqual(kdfa("sha1", k, "INTEGRITY", new Uint8Array(0), new Uint8Array(0), 160))
  })
  it("KDFe's blocks are H([i] ‖ Z ‖ label ‖ 00 ‖ U ‖ V)", () => {
    const z = new Uint8Array(32).fill(9)
    const out = kdfe("sha256", z, "IDENTITY", Uint8Array.of(5), Uint8Array.of(6), 512)
    const block = (i: number) =>
      createHash("sha256").update(Uint8Array.of(0, 0, 0, i)).update(z).update(Buffer.from("IDENTITY\0")).update(Uint8Array.of(5, 6)).digest()
    expect(Buffer.from(out).equals(Buffer.concat([block(1), block(2)]))).toBe(true)
  })
})

describe("MakeCredential / ActivateCredential", () => {
  const cases = [
    { label: "RSA-2048", gen: () => generateKeyPairSync("rsa", { modulusLength: 2048 }) },
    { label: "ECC P-256", gen: () => generateKeyPairSync("ec", { namedCurve: "P-256" }) },
    { label: "ECC P-384", gen: () => generateKeyPairSync("ec", { namedCurve: "P-384" }) }
  ]
  for (const c of cases) {
    it.effect(`round-trips a secret through a ${c.label} EK built from the standard EK template`, () =>
      Effect.sync(() => {
        const kp = c.gen()
        const ek = right(ekPublicFromKey(kp.publicKey))
        expect(ek.attributes).toBe(0x000300b2)
        const ekReparsed = right(parseTpm2bPublic(marshalTpm2bPublic(ek)))
        const akName = nameOf(makeAk("ecc").public)
        const secret = new Uint8Array(randomBytes(32))
        const blob = right(makeCredential(ekReparsed, akName, secret))
        const file = encodeCredentialFile(blob)
        expect(Buffer.from(file.subarray(0, 8)).toString("hex")).toBe("badcc0de00000001")
        const back = right(decodeCredentialFile(file))
        expect(right(activateCredentialWithKey(kp.privateKey, ek, akName, back))).toEqual(secret)

        // a flipped bit anywhere in the encrypted identity or its HMAC fails the integrity check
        const tampered = new Uint8Array(blob.credential)
        tampered[tampered.length - 1] = tampered[tampered.length - 1]! ^ 1
        const bad = activateCredentialWithKey(kp.privateKey, ek, akName, { ...blob, credential: tampered })
        expect(Either.isLeft(bad) && bad.left.reason).toBe("integrity")
        // bound to the AK name
        const otherName = nameOf(makeAk("ecc").public)
        const wrongAk = activateCredentialWithKey(kp.privateKey, ek, otherName, blob)
        expect(Either.isLeft(wrongAk) && wrongAk.left.reason).toBe("integrity")
      })
    )
  }
  it("a blob for another EK fails to activate without throwing", () => {
    const a = generateKeyPairSync("ec", { namedCurve: "P-256" })
    const b = generateKeyPairSync("ec", { namedCurve: "P-256" })
    const ekA = right(ekPublicFromKey(a.publicKey))
    const name = new Uint8Array(34)
    const blob = right(makeCredential(ekA, name, new Uint8Array(16)))
    const r = activateCredentialWithKey(b.privateKey, ekA, name, blob)
    expect(Either.isLeft(r)).toBe(true)
  })
  it("is deterministic for an injected rng (ECC ephemeral scalar and RSA seed)", () => {
    const kp = generateKeyPairSync("ec", { namedCurve: "P-256" })
    const ek = right(ekPublicFromKey(kp.publicKey))
    const rng = (n: number) => new Uint8Array(n).fill(0x11)
    const x = right(makeCredential(ek, new Uint8Array(34), new Uint8Array(32), rng))
    const y = right(makeCredential(ek, new Uint8Array(34), new Uint8Array(32), rng))
    expect(x).toEqual(y)
  })
  it("makes blobs for the vector EKs with the same shape as tpm2_makecredential's", () => {
    for (const alg of ["rsa", "ecc"]) {
      const ek = right(parseTpm2bPublic(readVector("tpm", "ek", `ek_${alg}.pub`)))
      const name = readVector("tpm", "ak", `ak_${alg}.name`)
      const ours = encodeCredentialFile(right(makeCredential(ek, name, readVector("tpm", "makecredential", "mkcred_secret.bin"))))
      expect(ours.length).toBe(readVector("tpm", "makecredential", `mkcred_${alg}.out`).length)
    }
  })
  it("rejects a secret longer than the EK nameAlg digest", () => {
    const ek = right(parseTpm2bPublic(readVector("tpm", "ek", "ek_rsa.pub")))
    const r = makeCredential(ek, new Uint8Array(34), new Uint8Array(33))
    expect(Either.isLeft(r) && r.left.reason).toBe("key")
  })
})
