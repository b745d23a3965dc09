import { describe, expect, it } from "@effect/vitest"
import { Either, FastCheck } from "effect"
import { parseIni } from "../../src/config/ini.js"

const ok = (text: string) => Either.getOrThrow(parseIni(text))
const values = (text: string, section: string) => Object.fromEntries([...(ok(text).get(section) ?? [])].map(([k, v]) => [k, v.value]))
const err = (text: string) => {
  const r = parseIni(text)
  if (Either.isRight(r)) throw new Error(`expected an error for ${text}`)
  return r.left
}

describe("Keylime INI files (Python configparser, raw)", () => {
  it("reads sections and options split at the first '=' or ':', lower-casing option names", () => {
    const doc = ok(`[verifier]\nIP = 0.0.0.0\nport: 8881\ndatabase_url = postgresql://u:p@db/k\nempty =\n[Tenant]\nx=1\n`)
    expect([...doc.keys()]).toEqual(["verifier", "Tenant"])
    expect(values(`[verifier]\nIP = 0.0.0.0\nport: 8881\ndatabase_url = postgresql://u:p@db/k\nempty =\n`, "verifier")).toEqual({
      ip: "0.0.0.0",
      port: "8881",
      database_url: "postgresql://u:p@db/k",
      empty: ""
    })
    expect(doc.get("verifier")!.get("port")!.line).toBe(3)
  })

  it("skips whole-line # and ; comments but keeps what follows a value on its line", () => {
    expect(values(`# top\n[a]\n; note\n  # indented note\nx = 1 # not a comment\n`, "a")).toEqual({ x: "1 # not a comment" })
  })

  it("joins indented continuation lines, keeping inner blank lines and dropping trailing ones", () => {
    const v = values(`[a]\nlist = ['a',\n    'b']\ntext = one\n\n   two\n# comment inside\n   three\n\nnext = 2\n\n`, "a")
    expect(v).toEqual({ list: "['a',\n'b']", text: "one\n\ntwo\nthree", next: "2" })
  })

  it("keeps % literal (no interpolation) and merges [DEFAULT] into every section", () => {
    const text = `[DEFAULT]\nlevel = INFO\n[formatter_formatter]\nformat = %(asctime)s - %(message)s\n[logger_root]\nlevel = DEBUG\n`
    expect(values(text, "formatter_formatter")).toEqual({ level: "INFO", format: "%(asctime)s - %(message)s" })
    expect(values(text, "logger_root")).toEqual({ level: "DEBUG" })
    expect(ok(text).has("DEFAULT")).toBe(false)
  })

  it("refuses what configparser refuses, naming the line", () => {
    expect(err(`x = 1\n[a]\n`)).toMatchObject({ line: 1, message: "option x comes before any [section] header" })
    expect(err(`[a]\nx = 1\nX = 2\n`)).toMatchObject({ line: 3, message: "option x is set twice in [a]" })
    expect(err(`[a]\n[b]\n[a]\n`)).toMatchObject({ line: 3, message: "section [a] appears twice" })
    expect(err(`[a]\njust words\n`)).toMatchObject({ line: 2 })
    expect(err(`[]\n`)).toMatchObject({ line: 1 })
  })

  it("never throws on truncated or corrupted input", () => {
    const base = `[verifier]\nip = 1.2.3.4\nlist = ['a',\n  'b']\n; c\n[DEFAULT]\nx: y\n`
    FastCheck.assert(FastCheck.property(FastCheck.nat({ max: base.length }), FastCheck.char(), (at, ch) => {
      for (const text of [base.slice(0, at), base.slice(0, at) + ch + base.slice(at + 1)]) {
        const r = parseIni(text)
        if (Either.isLeft(r) && !(r.left.line >= 1)) return false
      }
      return true
    }), { numRuns: 500 })
  })
})
