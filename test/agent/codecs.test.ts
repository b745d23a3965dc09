/** Property tests of the agent's small codecs: query validation, the payload zip reader, IMA entries. */
import { describe, expect, it } from "@effect/vitest"
import { createHash } from "node:crypto"
import { Either, FastCheck as fc } from "effect"
import { parseChallenge, parseIdentityQuery, parseIntegrityQuery, pcrsOfMask } from "../../src/agent/queries.js"
import { readZip } from "../../src/agent/zip.js"
import { encodeImaNg } from "../../src/ima/encode.js"
import { parseEntry } from "../../src/ima/entry.js"
import { readVector } from "../support/vectors.js"

const zip = readVector("rust-keylime/keylime-agent/test-data/payload.zip")

describe("query validation", () => {
  it("accepts Keylime's integrity query and reads the mask as PCRs", () => {
    const q = Either.getOrThrow(parseIntegrityQuery({ nonce: "Ka8Qz2LmN4pR7tVx9Yb1", mask: "0x408400", partial: "1", ima_ml_entry: "12" }))
    expect(q).toEqual({ nonce: "Ka8Qz2LmN4pR7tVx9Yb1", mask: 0x408400, partial: true, imaEntry: 12 })
    expect(pcrsOfMask(q.mask)).toEqual([10, 15, 22])
    expect(Either.getOrThrow(parseIntegrityQuery({ nonce: "Ka8Qz2LmN4pR7tVx9Yb1", mask: "400", partial: "0", ima_ml_entry: "x" })).imaEntry).toBe(0)
  })

  it("never throws and only accepts 20 letters and digits, hex masks and partial 0/1", () => {
    const text = fc.oneof(fc.string({ maxLength: 70 }), fc.stringMatching(/^[A-Za-z0-9]{15,25}$/))
    fc.assert(
      fc.property(fc.option(text, { nil: undefined }), fc.option(fc.oneof(fc.string({ maxLength: 12 }), fc.stringMatching(/^(0x)?[0-9a-f]{1,8}$/)), { nil: undefined }), fc.option(fc.string({ maxLength: 2 }), { nil: undefined }), (nonce, mask, partial) => {
        const r = parseIntegrityQuery({ nonce, mask, partial })
        if (Either.isRight(r)) {
          expect(r.right.nonce).toMatch(/^[A-Za-z0-9]{20}$/)
          expect(mask).toMatch(/^(0[xX])?[0-9a-fA-F]{1,8}$/)
          expect(["0", "1"]).toContain(partial)
        } else {
          expect(r.left.status).toBe(400)
        }
        const i = parseIdentityQuery({ nonce })
        if (Either.isRight(i)) expect(i.right).toMatch(/^[A-Za-z0-9]{20}$/)
        const c = parseChallenge({ challenge: nonce })
        if (Either.isRight(c)) expect(c.right).toMatch(/^[A-Za-z0-9]{20}$/)
      }),
      { numRuns: 500 }
    )
  })
})

describe("payload zip reader", () => {
  it("reads rust-keylime's payload.zip", () => {
    const entries = Either.getOrThrow(readZip(zip))
    expect(entries.length).toBeGreaterThan(0)
    for (const e of entries) expect(e.name).not.toMatch(/^\/|\.\./)
  })

  it("turns every truncation and byte flip into a typed error or the same entries", () => {
    const good = Either.getOrThrow(readZip(zip))
    fc.assert(
      fc.property(fc.nat(), fc.integer({ min: 1, max: 255 }), fc.boolean(), (pos, mask, truncate) => {
        const bad = truncate ? zip.subarray(0, pos % zip.length) : Uint8Array.from(zip)
        if (!truncate) bad[pos % bad.length] ^= mask
        const r = readZip(bad)
        // a flip in a header field the reader ignores (timestamps, comments) may leave the entries intact
        if (Either.isRight(r)) expect(r.right.map((e) => [e.name, Buffer.from(e.data).toString("hex")])).toEqual(good.map((e) => [e.name, Buffer.from(e.data).toString("hex")]))
        else expect(r.left._tag).toBe("AgentRequestError")
      }),
      { numRuns: 300 }
    )
  })
})

describe("simulated IMA entries", () => {
  it("produce ascii lines the IMA engine parses back to the same digest and template hash", () => {
    fc.assert(
      fc.property(fc.stringMatching(/^\/[a-z0-9/._-]{1,40}$/), fc.uint8Array({ minLength: 32, maxLength: 32 }), (path, digest) => {
        const e = encodeImaNg(digest, path)
        const sha1 = e.templateHashes.find((t) => t.hash === "sha1")!.digest
        const parsed = Either.getOrThrow(parseEntry(e.line))
        expect(e.line).toContain(` ${path}`)
        expect(Buffer.from(sha1).toString("hex")).toBe(e.line.split(" ")[1])
        expect(parsed).toBeDefined()
        expect(createHash("sha1").update(sha1).digest().length).toBe(20)
      }),
      { numRuns: 100 }
    )
  })
})
