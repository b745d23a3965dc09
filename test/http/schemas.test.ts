/** Property tests of the shared wire codecs: round trips, and garbage ends in a typed error, never a throw. */
import { describe, expect, it } from "@effect/vitest"
import { Either, FastCheck as fc, Schema } from "effect"
import { AgentId, Base64, Base64Bytes, PortNumber } from "../../schemas/Common.js"
import { EnvelopeBody } from "../../schemas/Envelope.js"
import { RegisterRequest } from "../../schemas/Registrar.js"

const decode = <A, I>(s: Schema.Schema<A, I>) => Schema.decodeUnknownEither(s)

describe("shared wire schemas", () => {
  it("round-trips any bytes through base64", () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 512 }), (bytes) => {
      const text = Schema.encodeSync(Base64Bytes)(bytes)
      expect(Buffer.from(text, "base64")).toEqual(Buffer.from(bytes))
      expect(Schema.decodeSync(Base64Bytes)(text)).toEqual(bytes)
    }))
  })

  it("accepts only canonical base64 text, and a flipped character never decodes to other bytes silently", () => {
    fc.assert(fc.property(fc.uint8Array({ minLength: 1, maxLength: 64 }), fc.nat(), fc.string({ minLength: 1, maxLength: 1 }), (bytes, at, ch) => {
      const text = Buffer.from(bytes).toString("base64")
      const i = at % text.length
      const mutated = text.slice(0, i) + ch + text.slice(i + 1)
      const r = decode(Base64Bytes)(mutated)
      if (Either.isRight(r)) {
        // still valid base64: then it must be exactly what that text encodes
        expect(Buffer.from(r.right).toString("base64")).toBe(mutated)
      }
    }), { numRuns: 2000 })
    expect(Either.isLeft(decode(Base64)("!!!not-base64!!!"))).toBe(true)
    expect(Either.isLeft(decode(Base64)("AAA"))).toBe(true)
  })

  it("decodes ports from integers and decimal strings 1-65535 and refuses anything else", () => {
    fc.assert(fc.property(fc.integer({ min: 1, max: 65535 }), (p) => {
      expect(Schema.decodeUnknownSync(PortNumber)(p)).toBe(p)
      expect(Schema.decodeUnknownSync(PortNumber)(String(p))).toBe(p)
    }))
    for (const bad of [0, 65536, -1, 1.5, "notaport", "", "9002x", null, true, {}]) {
      expect(Either.isLeft(decode(PortNumber)(bad)), String(bad)).toBe(true)
    }
  })

  it("never throws on arbitrary JSON for agent ids, envelopes and registration bodies", () => {
    fc.assert(fc.property(fc.jsonValue(), (v) => {
      for (const s of [AgentId, EnvelopeBody, RegisterRequest] as const) {
        const r = decode(s as Schema.Schema<unknown, unknown>)(v)
        expect(Either.isLeft(r) || Either.isRight(r)).toBe(true)
      }
    }), { numRuns: 1000 })
  })

  it("accepts Keylime's agent ids and refuses path tricks", () => {
    expect(Either.isRight(decode(AgentId)("d432fbb3-d2f1-4a97-9ef7-75bd81c00001"))).toBe(true)
    for (const bad of ["", "bad id!", "bad%20id!", "../x", "a/b", "x".repeat(256)]) {
      expect(Either.isLeft(decode(AgentId)(bad)), bad).toBe(true)
    }
  })
})
