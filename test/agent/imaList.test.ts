import { describe, expect, it } from "@effect/vitest"
import { readFileSync } from "node:fs"
import { FastCheck as fc } from "effect"
import { ImaLines } from "../../src/agent/measurements/imaList.js"
import { vectorPath } from "../support/vectors.js"

const real = readFileSync(vectorPath("rust-keylime/keylime-agent/test-data/ima/ascii_runtime_measurements"), "utf8")
const realLines = real.split("\n").filter((l) => l !== "")

describe("IMA list offsets", () => {
  it("serves the list from an entry with rust-keylime's rules (equal: empty, beyond: from 0)", () => {
    const l = new ImaLines()
    l.refresh(real)
    expect(l.length).toBe(realLines.length)
    expect(l.slice(0)).toEqual({ entry: 0, list: real })
    expect(l.slice(5).list).toBe(realLines.slice(5).join("\n") + "\n")
    expect(l.slice(realLines.length)).toEqual({ entry: realLines.length, list: "" })
    expect(l.slice(realLines.length + 1)).toEqual({ entry: 0, list: real })
  })

  it("indexes a growing file incrementally and holds back a half-written line", () => {
    fc.assert(
      fc.property(fc.array(fc.nat({ max: real.length }), { maxLength: 6 }), (cuts) => {
        const l = new ImaLines()
        for (const c of [...cuts].sort((a, b) => a - b)) l.refresh(real.slice(0, c))
        l.refresh(real)
        expect(l.slice(0).list).toBe(real)
        expect(l.length).toBe(realLines.length)
      }),
      { numRuns: 50 }
    )
  })

  it("re-indexes a file that was replaced", () => {
    const l = new ImaLines()
    l.refresh(real)
    l.refresh("10 aa ima-ng sha256:bb /x\n")
    expect(l.slice(0)).toEqual({ entry: 0, list: "10 aa ima-ng sha256:bb /x\n" })
  })
})
