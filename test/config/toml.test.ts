import { describe, expect, it } from "@effect/vitest"
import { Either, FastCheck } from "effect"
import { parseToml, type TomlValue } from "../../src/config/toml.js"

const ok = (text: string) => Either.getOrThrow(parseToml(text))
const err = (text: string) => {
  const r = parseToml(text)
  if (Either.isRight(r)) throw new Error(`expected an error for ${text}`)
  return r.left
}

describe("TOML subset", () => {
  it("reads sections, strings, numbers, booleans, arrays and comments", () => {
    const doc = ok(`# attest
[registrar]
ip = "0.0.0.0"   # all interfaces
port = 8_890
tls_dir = 'C:\\literal'
trusted_client_ca = [
  "default",   # the generated CA
  'extra.crt',
]
enabled = true
ratio = -1.5e2
empty = []
"quoted key" = "tab\\tu\\u00e9"
`)
    expect(doc["registrar"]).toEqual({
      ip: "0.0.0.0",
      port: 8890,
      tls_dir: "C:\\literal",
      trusted_client_ca: ["default", "extra.crt"],
      enabled: true,
      ratio: -150,
      empty: [],
      "quoted key": "tab\tué"
    })
  })

  it("reports the line of each error", () => {
    expect(err(`[a]\nx = 1\nx = 2\n`)).toMatchObject({ line: 3, message: "x is set twice in [a]" })
    expect(err(`[a]\n\ny = "open\n`)).toMatchObject({ line: 3, message: "unterminated string" })
    expect(err(`[a]\nz = bare\n`)).toMatchObject({ line: 2, message: "invalid value bare (strings need quotes)" })
    expect(err(`[a]\n[a]\n`)).toMatchObject({ line: 2 })
    expect(err(`[a]\nw = 1 2\n`).message).toContain("after the value")
    expect(err(`[a]\nv = { x = 1 }\n`).message).toBe("inline tables are not supported")
    expect(err(`[a]\nu = [1,\n2\n`).message).toBe("unterminated array")
  })

  it("keeps __proto__ and constructor as plain keys", () => {
    const doc = ok(`[constructor]\n__proto__ = 1\n`)
    expect(Object.keys(doc["constructor"]!)).toEqual(["__proto__"])
  })

  const value: FastCheck.Arbitrary<TomlValue> = FastCheck.oneof(
    FastCheck.string().filter((s) => !/[\u0000-\u001f\u007f\ud800-\udfff]/.test(s)),
    FastCheck.integer(),
    FastCheck.boolean(),
    FastCheck.array(FastCheck.oneof(FastCheck.string({ unit: "grapheme-ascii" }), FastCheck.integer()), { maxLength: 4 })
  )
  const render = (v: TomlValue): string => (Array.isArray(v) ? `[${v.map(render).join(", ")}]` : typeof v === "string" ? JSON.stringify(v) : String(v))
  const key = FastCheck.stringMatching(/^[a-z_][a-z0-9_]{0,11}$/)

  it("round-trips generated documents", () => {
    FastCheck.assert(FastCheck.property(
      FastCheck.dictionary(key, FastCheck.dictionary(key, value, { maxKeys: 5 }), { maxKeys: 4 }),
      (doc) => {
        const text = Object.entries(doc).map(([s, t]) => `[${s}]\n${Object.entries(t).map(([k, v]) => `${k} = ${render(v)}`).join("\n")}\n`).join("\n")
        const back = ok(text)
        return Object.entries(doc).every(([s, t]) => JSON.stringify({ ...back[s] }) === JSON.stringify(t))
      }
    ))
  })

  it("never throws on truncated or corrupted input", () => {
    const base = `[verifier]\nip = "1.2.3.4"\nport = 8881\nlist = ["a", 'b', 3]\nflag = false\n`
    FastCheck.assert(FastCheck.property(FastCheck.nat({ max: base.length }), FastCheck.char(), (at, ch) => {
      for (const text of [base.slice(0, at), base.slice(0, at) + ch + base.slice(at + 1)]) {
        const r = parseToml(text)
        if (Either.isLeft(r) && (r.left._tag !== "TomlError" || !(r.left.line >= 1))) return false
      }
      return true
    }), { numRuns: 500 })
  })
})
