import { describe, expect, it } from "@effect/vitest"
import { Either, FastCheck } from "effect"
import { lineOf, parseToml, type TomlValue } from "../../src/config/toml.js"

const ok = (text: string) => Either.getOrThrow(parseToml(text))
const err = (text: string) => {
  const r = parseToml(text)
  if (Either.isRight(r)) throw new Error(`expected an error for ${text}`)
  return r.left
}

describe("TOML config files", () => {
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
    expect({ ...doc["registrar"] }).toEqual({
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

  it("accepts inline tables, dotted keys, multi-line strings, escapes and other integer forms", () => {
    const doc = ok(`registrar.port = 9000
agent = { uuid = "a1", ip = "10.0.0.2" }
[verifier]
tls.dir = "x"
description = """
first line
second \\
  line"""
script = '''C:\\no\\escapes'''
escapes = "quote \\" slash \\\\ nul-free \\U0001F600"
mask = 0x1f
perm = 0o755
bits = 0b101
`)
    expect(doc["registrar"]).toEqual({ port: 9000 })
    expect(doc["agent"]).toEqual({ uuid: "a1", ip: "10.0.0.2" })
    const v = doc["verifier"]!
    expect(v["tls"]).toEqual({ dir: "x" })
    expect(v["description"]).toBe("first line\nsecond line")
    expect(v["script"]).toBe("C:\\no\\escapes")
    expect(v["escapes"]).toBe("quote \" slash \\ nul-free \u{1F600}")
    expect([v["mask"], v["perm"], v["bits"]]).toEqual([31, 493, 5])
  })

  it("gives dates as their RFC 3339 text and keeps integers past 2^53 as their digits", () => {
    const v = ok(`[a]
offset = 1979-05-27T07:32:00Z
local = 1979-05-27T07:32:00.5
day = 1979-05-27
time = 07:32:00
big = 9007199254740993
`)["a"]!
    expect(v["offset"]).toBe("1979-05-27T07:32:00.000Z")
    expect(v["local"]).toBe("1979-05-27T07:32:00.500")
    expect(v["day"]).toBe("1979-05-27")
    expect(v["time"]).toBe("07:32:00.000")
    expect(v["big"]).toBe("9007199254740993")
  })

  it("keeps top-level values under the empty section, arrays of tables as arrays of tables", () => {
    const doc = ok(`top = 1\n[[servers]]\nip = "a"\n[[servers]]\nip = "b"\n`)
    expect(doc[""]).toEqual({ top: 1, servers: [{ ip: "a" }, { ip: "b" }] })
  })

  it("reports the line and column of each error", () => {
    expect(err(`[a]\nx = 1\nx = 2\n`)).toMatchObject({ line: 3, column: 1 })
    expect(err(`[a]\nx = 1\nx = 2\n`).message).toBe("column 1: trying to redefine an already defined table or value: x = 2")
    expect(err(`[a]\n\ny = "open\n`)).toMatchObject({ line: 3 })
    expect(err(`[a]\nz = bare\n`)).toMatchObject({ line: 2, column: 5, message: "column 5: invalid value: z = bare" })
    expect(err(`[a]\n[a]\n`)).toMatchObject({ line: 2 })
    expect(err(`[a]\nw = 1 2\n`)).toMatchObject({ line: 2 })
    expect(err(`[a]\nu = [1,\n2\n`).line).toBeGreaterThanOrEqual(2)
    // a message is one line: the library's code excerpt is left out
    expect(err(`[a]\nz = bare\n`).message).not.toContain("\n")
  })

  it("keeps __proto__ and constructor as plain keys", () => {
    const doc = ok(`[constructor]\n__proto__ = 1\n`)
    expect(Object.keys(doc["constructor"]!)).toEqual(["__proto__"])
    expect(({} as Record<string, unknown>)["polluted"]).toBeUndefined()
  })

  it("finds the line of a plainly written option in its section", () => {
    const text = `[verifier]\nport = 1\n\n[registrar]\n# note\n  port = 2\n"ip" = "x"\n[agent]\ntls.dir = 1\n`
    expect(lineOf(text, "verifier", "port")).toBe(2)
    expect(lineOf(text, "registrar", "port")).toBe(6)
    expect(lineOf(text, "registrar", "ip")).toBe(7)
    expect(lineOf(text, "agent", "tls")).toBeUndefined()
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
    const base = `[verifier]\nip = "1.2.3.4"\nport = 8881\nlist = ["a", 'b', 3]\nflag = false\nt = { a = 1979-05-27 }\n`
    FastCheck.assert(FastCheck.property(FastCheck.nat({ max: base.length }), FastCheck.char(), (at, ch) => {
      for (const text of [base.slice(0, at), base.slice(0, at) + ch + base.slice(at + 1)]) {
        const r = parseToml(text)
        if (Either.isLeft(r) && (r.left._tag !== "TomlError" || !(r.left.line >= 1))) return false
      }
      return true
    }), { numRuns: 500 })
  })

  it("a broken file names the line and what is missing there", () => {
    const error = (text: string) => {
      const r = parseToml(text)
      return Either.isLeft(r) ? `line ${r.left.line}: ${r.left.message}` : "parsed"
    }
    expect([
      error(`[verifier]\nport =\nip = "1.2.3.4"\n`),
      error(`[verifier\nport = 1\n`),
      error(`[verifier]\nip = "1.2.3.4\nport = 1\n`),
      error(`[verifier]\nip = [1, 2\nport = 1\n`),
      error(`[verifier]\nt = { a = 1\n`)
    ]).toEqual([
      "line 2: port has no value after =: port =",
      "line 1: the table header is missing its closing ]: [verifier",
      "line 2: the string is missing its closing \": ip = \"1.2.3.4",
      "line 2: the array that starts here is missing its closing ]: ip = [1, 2",
      expect.stringMatching(/^line 2: /)
    ])
  })
})
