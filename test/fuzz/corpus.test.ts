/**
 * The corpus stays replayed: every folder under test/fuzz/corpus/ is a target of targets.ts (a
 * folder no target reads would be a found bug nobody replays), every file in it reads back, and every
 * target is registered by the file the catalogue names (which `npm run fuzz` runs).
 */
import { describe, expect, it } from "@effect/vitest"
import { existsSync, readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { CORPUS_DIR, corpusOf } from "./harness.js"
import { FUZZ_TARGETS } from "./targets.js"

const root = join(import.meta.dirname, "../..")

describe("fuzz corpus", () => {
  it("every corpus folder belongs to a target and every input in it reads back", () => {
    const folders = existsSync(CORPUS_DIR) ? readdirSync(CORPUS_DIR) : []
    expect(folders.filter((f) => !(f in FUZZ_TARGETS))).toEqual([])
    for (const f of folders) {
      const files = readdirSync(join(CORPUS_DIR, f))
      expect(files.filter((n) => !n.endsWith(".json")), f).toEqual([])
      expect(corpusOf(f).length, f).toBe(files.length)
    }
  })

  it("every target is registered by the test file the catalogue names", () => {
    for (const [name, t] of Object.entries(FUZZ_TARGETS)) {
      const text = readFileSync(join(root, t.file), "utf8")
      expect(text.includes(`name: "${name}"`), `${name} in ${t.file}`).toBe(true)
    }
  })
})
