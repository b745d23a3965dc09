import { describe, expect, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import { jsonDepthExceeds } from "../../src/http/body.js"

/** The definition: a character loop that tracks strings and escapes one character at a time. */
const byCharacter = (text: string, limit: number): boolean => {
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 0x5c) i++
      else if (c === 0x22) inString = false
    } else if (c === 0x22) inString = true
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > limit) return true
    } else if (c === 0x5d || c === 0x7d) depth--
  }
  return false
}

describe("jsonDepthExceeds", () => {
  it("counts brackets outside strings only, escaped quotes included", () => {
    expect([
      jsonDepthExceeds(`{"a": [[1]]}`, 2),
      jsonDepthExceeds(`{"a": [[1]]}`, 3),
      jsonDepthExceeds(`{"a": "[[[[\\"[[["}`, 1),
      jsonDepthExceeds(`{"a\\\\": [[1]]}`, 2),
      jsonDepthExceeds(`{"a\\\\\\"[[": 1}`, 1),
      jsonDepthExceeds(`{"unterminated [[[[`, 1)
    ]).toEqual([true, false, false, true, false, false])
  })

  it("agrees with the character loop on random texts of brackets, quotes and backslashes", () => {
    const text = fc.array(fc.constantFrom("{", "}", "[", "]", '"', "\\", "a", " ", ":"), { maxLength: 60 }).map((cs) => cs.join(""))
    fc.assert(
      fc.property(text, fc.integer({ min: 0, max: 6 }), (t, limit) => {
        expect(jsonDepthExceeds(t, limit)).toBe(byCharacter(t, limit))
      }),
      { numRuns: 5000 }
    )
  })
})
