import { describe, expect, it } from "@effect/vitest"
import { Either, FastCheck as fc } from "effect"
import { encodeImaNg, imaNgTemplateData, templateHash } from "../../src/ima/encode.js"
import { parseEntry } from "../../src/ima/entry.js"
import { replayPcr10 } from "../../src/ima/replay.js"
import { verifyIma } from "../../src/ima/verify.js"
import { readVector } from "../support/vectors.js"
import { FINAL, tpmList, tpmList256 } from "./helpers.js"

const hex = (b: Uint8Array) => Buffer.from(b).toString("hex")
const paths = fc.stringMatching(/^\/[a-zA-Z0-9/._-]{1,60}$/)
const digests = fc.uint8Array({ minLength: 32, maxLength: 32 })

describe("ima-ng encoder", () => {
  it("writes boot_aggregate template data byte for byte as the kernel does", () => {
    const digest = Buffer.from("0ef0ff51f6f7a4e6a93262ab47f23d4165e780d51b1762385821fecdda61b13a", "hex")
    expect(Buffer.from(imaNgTemplateData("sha256", digest, "boot_aggregate"))).toEqual(
      Buffer.from(readVector("tpm", "ima", "boot_aggregate_template_data.bin"))
    )
  })

  it("reproduces every line of the vector lists in both columns", () => {
    for (const [text, column] of [[tpmList(), "sha1"], [tpmList256(), "sha256"]] as const) {
      for (const line of text.split("\n").filter((l) => l !== "")) {
        const e = Either.getOrThrow(parseEntry(line))
        if (e.template !== "ima-ng") continue
        expect(encodeImaNg(e.digest, e.name, { digestAlg: e.digestAlg, column }).line).toBe(line)
      }
    }
  })

  it("re-encodes the ima-ng entries of the vector list into one that replays to the quoted PCR 10", () => {
    const lines = tpmList().split("\n").filter((l) => l !== "").map((line) => {
      const e = Either.getOrThrow(parseEntry(line))
      return e.template === "ima-ng" ? encodeImaNg(e.digest, e.name, { digestAlg: e.digestAlg }).line : line
    })
    expect(lines.filter((l) => l.includes(" ima-ng ")).length).toBe(7)
    const r = Either.getOrThrow(replayPcr10(lines.join("\n"), ["sha1", "sha256"]))
    expect({ sha1: hex(r["sha1"]!), sha256: hex(r["sha256"]!) }).toEqual(FINAL)
  })

  it("produces lines the parser reads back to the same template data, digest, name and template hashes", () => {
    fc.assert(
      fc.property(paths, digests, fc.constantFrom("sha1" as const, "sha256" as const), (path, digest, column) => {
        const e = encodeImaNg(digest, path, { banks: ["sha1", "sha256", "sha384"], column })
        const p = Either.getOrThrow(parseEntry(e.line))
        expect(p.template).toBe("ima-ng")
        expect(p.name).toBe(path)
        expect(hex(p.digest)).toBe(hex(digest))
        expect(hex(p.templateData)).toBe(hex(e.templateData))
        expect(e.templateHashes.map((t) => t.hash)).toEqual(["sha1", "sha256", "sha384"])
        for (const t of e.templateHashes) expect(hex(t.digest)).toBe(hex(templateHash(t.hash, p.templateData)))
        expect(p.templateHash).toBe(hex(e.templateHashes.find((t) => t.hash === column)!.digest))
        expect(verifyIma({ list: e.line, startEntry: 0, banks: ["sha1", "sha256"] }).failures).toEqual([])
      }),
      { numRuns: 200 }
    )
  })

  it("never yields an accepted entry once a hex character of its line is changed", () => {
    fc.assert(
      fc.property(paths, digests, fc.nat(), fc.integer({ min: 1, max: 15 }), (path, digest, at, delta) => {
        const line = encodeImaNg(digest, path).line
        // positions of the template hash and the digest hex, the fields whose change the hash must catch
        const positions = [...line].map((_, i) => i).filter((i) => (i >= 3 && i < 43) || (i >= 58 && i < 122))
        const i = positions[at % positions.length]!
        const flipped = (parseInt(line[i]!, 16) + delta) % 16
        const bad = line.slice(0, i) + flipped.toString(16) + line.slice(i + 1)
        const r = verifyIma({ list: bad, startEntry: 0, banks: ["sha1"] })
        expect(r.failures.length).toBeGreaterThan(0)
      }),
      { numRuns: 200 }
    )
  })

  it("ends truncated lines in a typed parse error or a template-hash failure, never an exception", () => {
    fc.assert(
      fc.property(paths, digests, fc.nat(), (path, digest, cut) => {
        const line = encodeImaNg(digest, path).line
        const short = line.slice(0, cut % line.length)
        const p = parseEntry(short)
        if (Either.isLeft(p)) expect(p.left._tag).toBe("ImaParseError")
        else expect(verifyIma({ list: short, startEntry: 0 }).failures.length).toBeGreaterThan(0)
      }),
      { numRuns: 200 }
    )
  })
})
