/** Property tests: every codec round-trips, and mutated quotes never throw nor verify. */
import { describe, expect, it } from "@effect/vitest"
import { Either, FastCheck as fc } from "effect"
import {
  decodeQuoteString, encodeQuoteString, makeTpmtPublic, marshalAttest, marshalPcrBlob, marshalPcrSelection,
  marshalSignature, marshalTpm2bPublic, maskOfPcrs, parseAttest, parsePcrBlob, parsePcrSelection, parseSignature,
  parseTpm2bPublic, pcrsOfMask, TPMA_OBJECT_RESERVED, verifyQuote, type HashAlg, type PcrBlob, type TpmsAttest, type TpmtPublicFields,
  type TpmtSignature
} from "../../src/tpm/index.js"
import { keyObjectOf, sameKey } from "../../src/tpm/node.js"
import { makeAk, makeQuote } from "./quoteFixture.js"

const hashArb = fc.constantFrom<HashAlg>("sha1", "sha256", "sha384", "sha512")
const bytes = (max: number) => fc.uint8Array({ maxLength: max })
const hashIdArb = fc.constantFrom(0x0004, 0x000b, 0x000c, 0x000d)
const symArb = fc.option(fc.record({ alg: fc.constant(0x0006), keyBits: fc.constantFrom(128, 256), mode: fc.constantFrom(0x0043, 0x0042) }), { nil: null })
const common = { nameAlg: hashArb, attributes: fc.integer({ min: 0, max: 0xffffffff }).map((a) => (a & ~TPMA_OBJECT_RESERVED) >>> 0), authPolicy: bytes(64) }

const publicArb: fc.Arbitrary<TpmtPublicFields> = fc.oneof(
  fc.record({
    type: fc.constant("rsa" as const), ...common, symmetric: symArb,
    scheme: fc.option(fc.record({ scheme: fc.constantFrom(0x0014, 0x0016, 0x0017), hashAlg: hashIdArb }), { nil: null }),
    keyBits: fc.constantFrom(2048, 3072), exponent: fc.constantFrom(0, 3, 65537), modulus: bytes(384)
  }),
  fc.record({
    type: fc.constant("ecc" as const), ...common, symmetric: symArb,
    scheme: fc.option(fc.oneof(
      fc.record({ scheme: fc.constantFrom(0x0018, 0x0019, 0x001c), hashAlg: hashIdArb }),
      fc.record({ scheme: fc.constant(0x001a), hashAlg: hashIdArb, count: fc.integer({ min: 0, max: 0xffff }) })
    ), { nil: null }),
    curveId: fc.constantFrom(3, 4), kdf: fc.option(fc.record({ scheme: fc.constant(0x0007), hashAlg: hashIdArb }), { nil: null }),
    x: bytes(48), y: bytes(48)
  }),
  fc.record({
    type: fc.constant("keyedhash" as const), ...common,
    scheme: fc.option(fc.oneof(
      fc.record({ scheme: fc.constant(0x0005), hashAlg: hashIdArb }),
      fc.record({ scheme: fc.constant(0x000a), hashAlg: hashIdArb, kdf: fc.constant(0x0007) })
    ), { nil: null }),
    unique: bytes(64)
  }),
  fc.record({ type: fc.constant("symcipher" as const), ...common, symmetric: symArb, unique: bytes(64) })
)

const selectionArb = fc.uniqueArray(hashArb, { maxLength: 4 }).chain((banks) =>
  fc.tuple(...banks.map((hash) => fc.uniqueArray(fc.integer({ min: 0, max: 23 }), { maxLength: 24 }).map((p) => ({ hash, sizeofSelect: 3, pcrs: p.sort((a, b) => a - b) }))))
)

const digestLen: Record<HashAlg, number> = { sha1: 20, sha256: 32, sha384: 48, sha512: 64 }
const blobArb: fc.Arbitrary<PcrBlob> = selectionArb.chain((sel) =>
  fc.tuple(...sel.map((b) => fc.tuple(...b.pcrs.map(() => fc.uint8Array({ minLength: digestLen[b.hash], maxLength: digestLen[b.hash] }))))).map((vals) => ({
    selection: sel,
    values: sel.map((b, i) => ({ hash: b.hash, values: new Map(b.pcrs.map((p, j) => [p, vals[i]![j]!] as const)) }))
  }))
)

const attestArb: fc.Arbitrary<TpmsAttest> = fc.record({
  magic: fc.integer({ min: 0, max: 0xffffffff }),
  qualifiedSigner: bytes(66), extraData: bytes(64),
  clockInfo: fc.record({ clock: fc.bigUint(2n ** 64n - 1n), resetCount: fc.integer({ min: 0, max: 0xffffffff }), restartCount: fc.integer({ min: 0, max: 0xffffffff }), safe: fc.boolean() }),
  firmwareVersion: fc.bigUint(2n ** 64n - 1n)
}).chain((c) =>
  fc.oneof(
    fc.record({ pcrSelect: selectionArb, pcrDigest: bytes(64) }).map((attested): TpmsAttest => ({ ...c, type: "quote", attested })),
    fc.record({ name: bytes(66), qualifiedName: bytes(66) }).map((attested): TpmsAttest => ({ ...c, type: "certify", attested }))
  )
)

const signatureArb: fc.Arbitrary<TpmtSignature> = fc.oneof(
  fc.record({ alg: fc.constantFrom("rsassa" as const, "rsapss" as const), hash: hashArb, sig: bytes(512) }),
  fc.record({ alg: fc.constant("ecdsa" as const), hash: hashArb, r: bytes(66), s: bytes(66) })
)

const roundTrip = <A>(value: A, marshal: (a: A) => Uint8Array, parse: (b: Uint8Array) => Either.Either<A, unknown>) => {
  const bytesOut = marshal(value)
  const back = parse(bytesOut)
  expect(Either.isRight(back)).toBe(true)
  if (Either.isRight(back)) expect(Buffer.from(marshal(back.right)).equals(Buffer.from(bytesOut))).toBe(true)
  return back
}

const neverThrows = (f: () => unknown) => expect(f).not.toThrow()

describe("codec round trips", () => {
  it("TPM2B_PUBLIC", () =>
    fc.assert(fc.property(publicArb, (p) => {
      const back = roundTrip(makeTpmtPublic(p), marshalTpm2bPublic, parseTpm2bPublic)
      if (Either.isRight(back)) expect({ ...back.right, bytes: undefined }).toEqual({ ...p, bytes: undefined })
    }), { numRuns: 300 }))
  it("TPMS_ATTEST", () =>
    fc.assert(fc.property(attestArb, (a) => {
      const back = roundTrip(a, marshalAttest, parseAttest)
      if (Either.isRight(back)) expect(back.right).toEqual(a)
    }), { numRuns: 300 }))
  it("TPMT_SIGNATURE", () =>
    fc.assert(fc.property(signatureArb, (s) => {
      const back = roundTrip(s, marshalSignature, parseSignature)
      if (Either.isRight(back)) expect(back.right).toEqual(s)
    }), { numRuns: 300 }))
  it("TPML_PCR_SELECTION", () =>
    fc.assert(fc.property(selectionArb, (s) => {
      const back = roundTrip(s, marshalPcrSelection, parsePcrSelection)
      if (Either.isRight(back)) expect(back.right).toEqual(s)
    }), { numRuns: 300 }))
  it("tpm2-tools PCR blob", () =>
    fc.assert(fc.property(blobArb, (b) => {
      const back = roundTrip(b, marshalPcrBlob, parsePcrBlob)
      if (Either.isRight(back)) expect(back.right).toEqual(b)
    }), { numRuns: 200 }))
  it("Keylime quote string", () =>
    fc.assert(fc.property(fc.uint8Array({ minLength: 1, maxLength: 300 }), fc.uint8Array({ minLength: 1, maxLength: 300 }), fc.uint8Array({ minLength: 1, maxLength: 300 }), (attest, signature, pcrBlob) => {
      const s = encodeQuoteString({ attest, signature, pcrBlob })
      expect(decodeQuoteString(s)).toEqual(Either.right({ attest, signature, pcrBlob }))
    }), { numRuns: 200 }))
  it("Keylime PCR masks", () =>
    fc.assert(fc.property(fc.uniqueArray(fc.integer({ min: 0, max: 23 })), (pcrs) => {
      expect(pcrsOfMask(maskOfPcrs(pcrs))).toEqual([...pcrs].sort((a, b) => a - b))
    })))
  it("Keylime mask 0x408000 is PCRs 15 and 22", () => {
    expect(pcrsOfMask("0x408000")).toEqual([15, 22])
    expect(maskOfPcrs([22, 15])).toBe("0x408000")
    expect(pcrsOfMask("0xzz")).toBeUndefined()
  })
})

describe("reserved TPMA_OBJECT bits", () => {
  // found by the quote-tamper fuzz target: the recorded ECC AK with attribute bit 24 set verified its quote
  it("a public area with a reserved attribute bit is refused, naming the bits; a quote does not verify with it", () => {
    const ak = makeAk("ecc")
    const q = makeQuote(ak, [{ hash: "sha256", pcrs: [0, 10] }])
    const { bytes: _parsed, ...fields } = ak.public
    for (const bit of [0, 3, 8, 9, 12, 15, 20, 24, 31]) {
      const bytes = marshalTpm2bPublic({ ...fields, attributes: (fields.attributes | (1 << bit)) >>> 0 })
      const parsed = parseTpm2bPublic(bytes)
      expect(Either.isLeft(parsed) && parsed.left.message).toBe(`reserved TPMA_OBJECT bits set (0x${((1 << bit) >>> 0).toString(16).padStart(8, "0")})`)
      const r = verifyQuote({ akPublic: bytes, attest: q.attest, signature: q.signature, pcrs: q.pcrs, nonce: q.nonce })
      expect(Either.isLeft(r) && r.left.check).toBe("key")
    }
    expect(Either.isRight(verifyQuote({ akPublic: marshalTpm2bPublic(ak.public), attest: q.attest, signature: q.signature, pcrs: q.pcrs, nonce: q.nonce }))).toBe(true)
  })
})

describe("the AK's own scheme", () => {
  // found by the quote-tamper fuzz target: the recorded ECC AK with its scheme's hash changed verified its quote
  it("a quote signed with another scheme or hash than the AK's public area names is refused; a NULL scheme takes any", () => {
    const ak = makeAk("ecc", "ecdsa", "sha256")
    const q = makeQuote(ak, [{ hash: "sha256", pcrs: [0, 10] }])
    const { bytes: _parsed, ...fields } = ak.public
    const withScheme = (scheme: { readonly scheme: number; readonly hashAlg: number } | null) =>
      verifyQuote({ akPublic: marshalTpm2bPublic({ ...fields, scheme } as TpmtPublicFields), attest: q.attest, signature: q.signature, pcrs: q.pcrs, nonce: q.nonce })
    const sha384 = withScheme({ scheme: 0x0018, hashAlg: 0x000c })
    expect(Either.isLeft(sha384) && sha384.left).toMatchObject({ check: "scheme", message: "the AK's scheme is 0x0018 with hash 0x000c, the signature is ecdsa with sha256" })
    const schnorr = withScheme({ scheme: 0x001c, hashAlg: 0x000b })
    expect(Either.isLeft(schnorr) && schnorr.left.check).toBe("scheme")
    expect(Either.isRight(withScheme({ scheme: 0x0018, hashAlg: 0x000b }))).toBe(true)
    expect(Either.isRight(withScheme(null))).toBe(true)
  })
})

describe("mutations never throw and never verify", () => {
  const rsa = makeAk("rsa")
  const ecc = makeAk("ecc")
  const selection = [{ hash: "sha256" as const, pcrs: [0, 1, 10, 16] }, { hash: "sha1" as const, pcrs: [10] }]
  const quotes = [
    { ak: rsa, q: makeQuote(rsa, selection) },
    { ak: ecc, q: makeQuote(ecc, selection) }
  ]
  const flip = (b: Uint8Array, i: number, mask: number) => {
    const c = new Uint8Array(b)
    c[i % c.length] = c[i % c.length]! ^ mask
    return c
  }
  const maskArb = fc.integer({ min: 1, max: 255 })

  for (const { ak, q } of quotes) {
    const label = ak.public.type
    const base = { akPublic: ak.public, attest: q.attest, signature: q.signature, pcrs: q.pcrs, nonce: q.nonce }

    it(`${label}: the unmutated quote verifies (control)`, () => {
      expect(Either.isRight(verifyQuote(base))).toBe(true)
      expect(Either.isRight(verifyQuote({ ...base, akPublic: marshalTpm2bPublic(ak.public) }))).toBe(true)
    })
    it(`${label}: any flipped byte of the attest is rejected`, () =>
      fc.assert(fc.property(fc.nat(), maskArb, (i, m) => {
        let r: Either.Either<unknown, unknown> = Either.right(0)
        neverThrows(() => { r = verifyQuote({ ...base, attest: flip(q.attest, i, m) }) })
        expect(Either.isLeft(r)).toBe(true)
      }), { numRuns: 300 }))
    it(`${label}: any flipped byte of the signature is rejected`, () =>
      fc.assert(fc.property(fc.nat(), maskArb, (i, m) => {
        expect(Either.isLeft(verifyQuote({ ...base, signature: flip(q.signature, i, m) }))).toBe(true)
      }), { numRuns: 300 }))
    it(`${label}: a flipped byte of the AK public area is rejected unless the key itself is unchanged`, () =>
      fc.assert(fc.property(fc.nat(), maskArb, (i, m) => {
        const mutated = flip(marshalTpm2bPublic(ak.public), i, m)
        const r = verifyQuote({ ...base, akPublic: mutated })
        if (Either.isRight(r)) {
          // nameAlg or attribute flips keep the key: the signature still proves that key signed it
          const pub = parseTpm2bPublic(mutated)
          const key = Either.flatMap(pub, keyObjectOf)
          expect(Either.isRight(key) && sameKey(key.right, ak.publicKey)).toBe(true)
        }
      }), { numRuns: 300 }))
    it(`${label}: a flipped byte of the PCR blob fails to parse, fails to verify, or changes nothing`, () =>
      fc.assert(fc.property(fc.nat(), maskArb, (i, m) => {
        const blob = parsePcrBlob(flip(q.pcrBlob, i, m))
        if (Either.isLeft(blob)) return
        const r = verifyQuote({ ...base, pcrs: blob.right })
        // Padding, an unused slot, or a wider sizeofSelect over zero bits: same banks, PCRs and values.
        const meaning = (b: PcrBlob) => ({ selection: b.selection.map((e) => ({ hash: e.hash, pcrs: e.pcrs })), values: b.values })
        if (Either.isRight(r)) expect(meaning(blob.right)).toEqual(meaning(q.pcrs))
      }), { numRuns: 300 }))
    it(`${label}: every truncation of attest, signature, PCR blob and public area is a typed parse failure`, () => {
      const pub = marshalTpm2bPublic(ak.public)
      for (let n = 0; n < q.attest.length; n++) expect(parseAttest(q.attest.subarray(0, n))).toMatchObject({ _tag: "Left", left: { _tag: "TpmParseError" } })
      for (let n = 0; n < q.signature.length; n++) expect(parseSignature(q.signature.subarray(0, n))).toMatchObject({ _tag: "Left", left: { _tag: "TpmParseError" } })
      for (let n = 0; n < q.pcrBlob.length; n += 7) expect(parsePcrBlob(q.pcrBlob.subarray(0, n))).toMatchObject({ _tag: "Left", left: { _tag: "TpmParseError" } })
      for (let n = 0; n < pub.length; n++) expect(parseTpm2bPublic(pub.subarray(0, n))).toMatchObject({ _tag: "Left", left: { _tag: "TpmParseError" } })
      for (let n = 0; n < q.attest.length; n++) {
        const r = verifyQuote({ ...base, attest: q.attest.subarray(0, n) })
        expect(Either.isLeft(r) && r.left._tag).toBe("QuoteVerifyError")
      }
    })
    it(`${label}: mutated quote strings never throw and never verify`, () =>
      fc.assert(fc.property(fc.nat(), fc.integer({ min: 32, max: 126 }), (i, c) => {
        const s = q.quote
        const at = i % s.length
        if (s.charCodeAt(at) === c) return
        const mutated = s.slice(0, at) + String.fromCharCode(c) + s.slice(at + 1)
        const parts = decodeQuoteString(mutated)
        if (Either.isLeft(parts)) return
        const blob = parsePcrBlob(parts.right.pcrBlob)
        if (Either.isLeft(blob)) return
        const r = verifyQuote({ ...base, attest: parts.right.attest, signature: parts.right.signature, pcrs: blob.right })
        if (Either.isRight(r)) {
          // only a change base64 ignores (e.g. unused low bits of the last char) may verify
          expect(Buffer.from(parts.right.attest).equals(Buffer.from(q.attest))).toBe(true)
          expect(Buffer.from(parts.right.signature).equals(Buffer.from(q.signature))).toBe(true)
          expect(blob.right).toEqual(q.pcrs)
        }
      }), { numRuns: 300 }))
  }

  it("random bytes never throw from any parser", () =>
    fc.assert(fc.property(fc.uint8Array({ maxLength: 700 }), (b) => {
      neverThrows(() => {
        parseAttest(b); parseSignature(b); parsePcrBlob(b); parseTpm2bPublic(b); parsePcrSelection(b)
      })
    }), { numRuns: 500 }))

  it("rejects ECDAA and EC-Schnorr signatures with a clear parse error", () => {
    for (const alg of [0x1a, 0x1c]) {
      const r = parseSignature(Uint8Array.of(0, alg, 0, 0x0b, 0, 1, 1, 0, 1, 1))
      expect(Either.isLeft(r) && r.left.message).toMatch(/ECDAA|EC-Schnorr/)
    }
  })
  it("rejects a quote signed by a key that is not a restricted signing key", () => {
    const q = quotes[0]!.q
    const unrestricted = makeTpmtPublic({ ...rsa.public, attributes: rsa.public.attributes & ~0x10000 })
    const r = verifyQuote({ akPublic: unrestricted, attest: q.attest, signature: q.signature, pcrs: q.pcrs, nonce: q.nonce })
    expect(Either.isLeft(r) && r.left.check).toBe("key")
  })
  it("verifies RSAPSS and P-384 quotes with sha384/sha512 signing hashes", () => {
    for (const ak of [makeAk("rsa", "rsapss", "sha384"), makeAk("ecc", "ecdsa", "sha512", 384), makeAk("rsa", "rsassa", "sha1")]) {
      const q = makeQuote(ak, [{ hash: "sha256", pcrs: [0, 7] }])
      expect(Either.isRight(verifyQuote({ akPublic: ak.public, attest: q.attest, signature: q.signature, pcrs: q.pcrs, nonce: q.nonce, hashAlg: ak.hash }))).toBe(true)
    }
  })
})
