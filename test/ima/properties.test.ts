import { describe, expect, it } from "@effect/vitest"
import * as crypto from "node:crypto"
import { Either, FastCheck as fc } from "effect"
import { decodeRuntimePolicyJson, parseAllowlistText } from "../../schemas/RuntimePolicy.js"
import { decodeDsseEnvelopeJson, verificationKeyFrom, verifyEnvelope } from "../../src/ima/dsse.js"
import { signEnvelope } from "../../src/ima/dsseSign.js"
import { readVectorText } from "../support/vectors.js"
import { parseEntry, parseList } from "../../src/ima/entry.js"
import { decodeImaState, encodeImaState } from "../../src/ima/state.js"
import { verifyIma } from "../../src/ima/verify.js"
import { compile, makeLine, policyAllowing, tpmList } from "./helpers.js"

const vectorLines = tpmList().split("\n").filter((l) => l !== "")
const policy = compile(policyAllowing(tpmList()))
const noThrow = (text: string) => {
  const r = verifyIma({ list: text, startEntry: 0, policy, banks: ["sha1", "sha256"] })
  for (const f of r.failures) expect(typeof f.type).toBe("string")
  return r
}

const hexChars = fc.constantFrom(..."0123456789abcdef".split(""))
const hexString = (min: number, max: number) => fc.array(hexChars, { minLength: min, maxLength: max }).map((a) => a.join(""))
const pathArb = fc.array(fc.constantFrom(..."abcdefxyz/._-é".split("")), { minLength: 1, maxLength: 40 }).map((a) => "/" + a.join(""))

describe("IMA parser and engine under random input", () => {
  it("random byte strings end in typed errors or entries, never exceptions", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 400 }), (bytes) => {
        const text = Buffer.from(bytes).toString("latin1")
        const r = parseList(text)
        if (Either.isLeft(r)) expect(r.left._tag).toBe("ImaParseError")
        noThrow(text)
      }),
      { numRuns: 500 }
    )
  })
  it("random IMA-shaped lines parse or fail with a typed error naming line 1", () => {
    const lineArb = fc.tuple(
      fc.constantFrom("10", "11", "x"),
      hexString(0, 64),
      fc.constantFrom("ima", "ima-ng", "ima-sig", "ima-buf", "ima-xx"),
      fc.oneof(hexString(0, 70), fc.tuple(fc.constantFrom("sha1", "sha256", "md5", ""), hexString(0, 70)).map(([a, h]) => `${a}:${h}`)),
      pathArb,
      fc.option(hexString(0, 40))
    ).map(([pcr, th, t, d, p, x]) => `${pcr} ${th} ${t} ${d} ${p}${x === null ? "" : " " + x}`)
    fc.assert(
      fc.property(lineArb, (line) => {
        const r = parseEntry(line)
        if (Either.isLeft(r)) expect(r.left.line).toBe(1)
        noThrow(line)
      }),
      { numRuns: 1000 }
    )
  })
  it("round trip: a built line parses back to its fields and passes its own policy", () => {
    fc.assert(
      fc.property(hexString(64, 64), pathArb, (digest, path) => {
        const line = makeLine("ima-ng", `sha256:${digest}`, path)
        const e = Either.getOrThrow(parseEntry(line))
        expect(e.name).toBe(path)
        expect(Buffer.from(e.digest).toString("hex")).toBe(digest)
        expect(verifyIma({ list: line, startEntry: 0, policy: compile(policyAllowing(line)) }).failures).toEqual([])
      }),
      { numRuns: 200 }
    )
  })
  it("truncating the vector list never passes against the final PCR and never throws", () => {
    const text = tpmList()
    fc.assert(
      fc.property(fc.integer({ min: 0, max: text.length - 2 }), (n) => {
        const r = verifyIma({ list: text.slice(0, n), startEntry: 0, policy, quotedPcr10: { sha256: Buffer.from("3e3a5b719943a50ff11799ba76be2c80218f2c4dd13474f11b5f66ea85a6f212", "hex") } })
        expect(r.failures.length).toBeGreaterThan(0)
      }),
      { numRuns: 300 }
    )
  })
  it("a flipped character in any line is never accepted against the quoted PCR", () => {
    const text = vectorLines.join("\n")
    fc.assert(
      fc.property(fc.integer({ min: 0, max: text.length - 1 }), fc.constantFrom(..."0123456789abcdefz_ /:".split("")), (i, c) => {
        fc.pre(text[i] !== c && text[i] !== "\n")
        const changed = text.slice(0, i) + c + text.slice(i + 1)
        const r = verifyIma({ list: changed, startEntry: 0, policy, quotedPcr10: { sha1: Buffer.from("806337040afd6daa507edff837fcfacddb3a1400", "hex") } })
        // A flip inside a signature's unused bytes could still verify only if the template hash and PCR agree: they cannot.
        expect(r.failures.length).toBeGreaterThan(0)
      }),
      { numRuns: 500 }
    )
  })
  it("state JSON round-trips and rejects garbage with a ParseError", () => {
    const r = verifyIma({ list: tpmList(), startEntry: 0, policy, bootTime: 42 })
    expect(Either.getOrThrow(decodeImaState(encodeImaState(r.state)))).toEqual(r.state)
    fc.assert(
      fc.property(fc.string(), (s) => {
        const d = decodeImaState(s)
        if (Either.isLeft(d)) expect(d.left._tag).toBe("ParseError")
      })
    )
  })
  it("random allowlist text ends in a digest map or a line error", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 300 }), (s) => {
        const r = parseAllowlistText(s)
        if (Either.isLeft(r)) expect(r.left.line).toBeGreaterThan(0)
      })
    )
  })
})

describe("DSSE and policy codecs under random input", () => {
  const priv = crypto.generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey
  const pub = verificationKeyFrom(crypto.createPublicKey(priv).export({ format: "pem", type: "spki" }))!
  it("sign → verify round-trips any payload; any flipped payload or signature byte is rejected", () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 1, maxLength: 200 }), fc.nat(), (payload, at) => {
        const env = Either.getOrThrow(signEnvelope(payload, priv))
        expect(Buffer.from(Either.getOrThrow(verifyEnvelope(env, pub)))).toEqual(Buffer.from(payload))
        const p = Buffer.from(payload)
        p[at % p.length]! ^= 1 + (at % 255)
        expect(Either.isLeft(verifyEnvelope({ ...env, payload: p.toString("base64") }, pub))).toBe(true)
        const sig = Buffer.from(env.signatures[0]!.sig, "base64")
        sig[at % sig.length]! ^= 0x40
        expect(Either.isLeft(verifyEnvelope({ ...env, signatures: [{ sig: sig.toString("base64") }] }, pub))).toBe(true)
      }),
      { numRuns: 100 }
    )
  })
  it("truncated policy JSON and envelopes end in typed errors, never exceptions", () => {
    const text = readVectorText("keylime", "test", "data", "runtime-policy-test-signed.json")
    const policyText = readVectorText("keylime", "test", "data", "runtime-policy-test.json").trim()
    fc.assert(
      fc.property(fc.integer({ min: 0, max: policyText.length - 2 }), (n) => {
        const p = decodeRuntimePolicyJson(policyText.slice(0, n))
        expect(Either.isLeft(p) && p.left._tag === "ParseError").toBe(true)
        const e = decodeDsseEnvelopeJson(text.slice(0, Math.min(n, text.length - 2)))
        expect(Either.isLeft(e)).toBe(true)
      }),
      { numRuns: 300 }
    )
  })
})
