import { describe, expect, it } from "@effect/vitest"
import { createHmac } from "node:crypto"
import { Either, FastCheck as fc } from "effect"
import {
  activationAuthTag,
  authTag,
  challengeHmac,
  checkAuthTag,
  combineKeys,
  decodeAuthTag,
  decryptPayload,
  decryptWithNk,
  encryptForAgent,
  encryptPayload,
  generateBootstrapKeys,
  generateNk,
  xorKeys
} from "../../src/keys/index.js"

const agentId = "d432fbb3-d2f1-4a97-9ef7-75bd81c00000"
const nk = generateNk()

describe("bootstrap keys", () => {
  it("recombines K from U and V and accepts its auth_tag", () => {
    const { k, u, v } = generateBootstrapKeys()
    const tag = Either.getOrThrow(decodeAuthTag(authTag(k, agentId)))
    expect(Either.getOrThrow(combineKeys([u], [v], agentId, tag))).toEqual(k)
    expect(Either.getOrThrow(xorKeys(u, v))).toEqual(k)
  })

  it("picks the matching pair among stale halves", () => {
    const a = generateBootstrapKeys()
    const b = generateBootstrapKeys()
    const tag = Either.getOrThrow(decodeAuthTag(authTag(b.k, agentId)))
    expect(Either.getOrThrow(combineKeys([a.u, b.u], [a.v, b.v], agentId, tag))).toEqual(b.k)
  })

  it("rejects an auth_tag made for another agent id", () => {
    const { k, u, v } = generateBootstrapKeys()
    const tag = Either.getOrThrow(decodeAuthTag(authTag(k, "other-agent")))
    const r = combineKeys([u], [v], agentId, tag)
    expect(Either.isLeft(r) && r.left.reason).toBe("auth_tag")
    expect(checkAuthTag(k, agentId, tag)).toBe(false)
  })

  it("rejects auth_tags that are not 48 bytes of hex", () => {
    expect(Either.isLeft(decodeAuthTag("zz"))).toBe(true)
    expect(Either.isLeft(decodeAuthTag("00".repeat(47)))).toBe(true)
    expect(Either.isRight(decodeAuthTag("00".repeat(48)))).toBe(true)
  })

  it("rejects U and V of different lengths", () => {
    expect(Either.isLeft(xorKeys(new Uint8Array(16), new Uint8Array(32)))).toBe(true)
  })

  it("answers keys/verify with HMAC-SHA384(K, challenge)", () => {
    const { k } = generateBootstrapKeys()
    expect(challengeHmac(k, "abcdefghij0123456789")).toBe(
      createHmac("sha384", k).update("abcdefghij0123456789").digest("hex")
    )
  })

  it("keys the registrar activation HMAC with the base64 text of the secret", () => {
    const secret = new TextEncoder().encode("A".repeat(32))
    const expected = createHmac("sha384", Buffer.from("A".repeat(32)).toString("base64")).update(agentId).digest("hex")
    expect(activationAuthTag(secret, agentId)).toBe(expected)
    expect(activationAuthTag(secret, agentId)).toHaveLength(96)
  })
})

describe("payload encryption", () => {
  it("round-trips any payload with AES-256 and AES-128 keys", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 2048 }), fc.constantFrom(16, 32), (plain, size) => {
        const k = generateBootstrapKeys(size).k
        const sealed = Either.getOrThrow(encryptPayload(k, plain))
        expect(sealed.length).toBe(plain.length + 32)
        expect(Either.getOrThrow(decryptPayload(k, sealed))).toEqual(plain)
      }),
      { numRuns: 100 }
    )
  })

  it("turns every truncation and byte flip into a typed error", () => {
    const k = generateBootstrapKeys().k
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 1, maxLength: 256 }), fc.nat(), fc.integer({ min: 1, max: 255 }), fc.boolean(), (plain, pos, mask, truncate) => {
        const sealed = Either.getOrThrow(encryptPayload(k, plain))
        const bad = truncate ? sealed.subarray(0, pos % sealed.length) : Uint8Array.from(sealed)
        if (!truncate) bad[pos % bad.length] ^= mask
        const r = decryptPayload(k, bad)
        expect(Either.isLeft(r)).toBe(true)
        if (Either.isLeft(r)) expect(r.left._tag).toBe("KeyError")
      }),
      { numRuns: 200 }
    )
  })

  it("refuses keys that are neither 16 nor 32 bytes", () => {
    expect(Either.isLeft(encryptPayload(new Uint8Array(24), new Uint8Array(4)))).toBe(true)
    expect(Either.isLeft(decryptPayload(new Uint8Array(24), new Uint8Array(40)))).toBe(true)
  })
})

describe("NK", () => {
  it("decrypts what RSA-OAEP-SHA1 encrypted for its public key", () => {
    const { u } = generateBootstrapKeys()
    const ct = Either.getOrThrow(encryptForAgent(nk.publicPem, u))
    expect(ct.length).toBe(256)
    expect(Either.getOrThrow(decryptWithNk(nk, ct))).toEqual(u)
  })

  it("fails with a typed error on a corrupted ciphertext", () => {
    const ct = Either.getOrThrow(encryptForAgent(nk.publicPem, new Uint8Array(32)))
    fc.assert(
      fc.property(fc.nat({ max: 255 }), fc.integer({ min: 1, max: 255 }), (pos, mask) => {
        const bad = Uint8Array.from(ct)
        bad[pos] ^= mask
        const r = decryptWithNk(nk, bad)
        // a flip may (very rarely) still decode to valid OAEP; it must then not equal the original
        if (Either.isRight(r)) expect(r.right).not.toEqual(new Uint8Array(32))
        else expect(r.left._tag).toBe("KeyError")
      }),
      { numRuns: 50 }
    )
    expect(Either.isLeft(decryptWithNk(nk, ct.subarray(0, 100)))).toBe(true)
  })

  it("serves its public key as SPKI PEM", () => {
    expect(nk.publicPem.startsWith("-----BEGIN PUBLIC KEY-----\n")).toBe(true)
  })
})
