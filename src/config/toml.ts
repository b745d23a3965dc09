/**
 * The TOML subset attest's config files use: `[section]` tables, `key = value` with strings
 * (basic and literal), integers, floats, booleans and (multi-line) arrays of those, `#` comments.
 * `toml` is only a transitive dependency of @effect/cli, so this small parser keeps the project on
 * its declared dependencies and gives errors by line.
 */
import { Data, Either } from "effect"

export type TomlValue = string | number | boolean | ReadonlyArray<TomlValue>
/** Section name → key → value; keys before the first `[section]` are under "". */
export type TomlDocument = Readonly<Record<string, Readonly<Record<string, TomlValue>>>>

export class TomlError extends Data.TaggedError("TomlError")<{
  readonly line: number
  readonly message: string
}> {}

const BARE_KEY = /^[A-Za-z0-9_-]+$/

class Cursor {
  pos = 0
  line = 1
  constructor(readonly text: string) {}
  peek(): string {
    return this.text[this.pos] ?? ""
  }
  next(): string {
    const c = this.text[this.pos++] ?? ""
    if (c === "\n") this.line++
    return c
  }
  done(): boolean {
    return this.pos >= this.text.length
  }
  /** Spaces and tabs only. */
  skipBlank(): void {
    while (this.peek() === " " || this.peek() === "\t") this.pos++
  }
  /** Blanks, newlines and comments (inside arrays). */
  skipAll(): void {
    for (;;) {
      this.skipBlank()
      const c = this.peek()
      if (c === "#") while (!this.done() && this.peek() !== "\n") this.pos++
      else if (c === "\n" || c === "\r") this.next()
      else return
    }
  }
  fail(message: string): never {
    throw new TomlError({ line: this.line, message })
  }
}

const ESCAPES: Record<string, string> = { b: "\b", t: "\t", n: "\n", f: "\f", r: "\r", '"': '"', "\\": "\\" }

const parseBasicString = (c: Cursor): string => {
  c.next() // opening quote
  if (c.text.startsWith('""', c.pos)) c.fail("multi-line strings are not supported")
  let out = ""
  for (;;) {
    if (c.done() || c.peek() === "\n") c.fail("unterminated string")
    const ch = c.next()
    if (ch === '"') return out
    if (ch !== "\\") {
      out += ch
      continue
    }
    const e = c.next()
    if (e === "u" || e === "U") {
      const n = e === "u" ? 4 : 8
      const hex = c.text.slice(c.pos, c.pos + n)
      if (!/^[0-9A-Fa-f]+$/.test(hex) || hex.length !== n) c.fail(`bad \\${e} escape`)
      c.pos += n
      out += String.fromCodePoint(parseInt(hex, 16))
    } else if (e in ESCAPES) out += ESCAPES[e]
    else c.fail(`unknown escape \\${e}`)
  }
}

const parseLiteralString = (c: Cursor): string => {
  c.next()
  if (c.text.startsWith("''", c.pos)) c.fail("multi-line strings are not supported")
  const end = c.text.indexOf("'", c.pos)
  const nl = c.text.indexOf("\n", c.pos)
  if (end < 0 || (nl >= 0 && nl < end)) c.fail("unterminated string")
  const s = c.text.slice(c.pos, end)
  c.pos = end + 1
  return s
}

const parseScalarWord = (c: Cursor): TomlValue => {
  const m = /^[A-Za-z0-9_+.:-]+/.exec(c.text.slice(c.pos))
  if (!m) c.fail(`expected a value, found ${JSON.stringify(c.peek() || "end of line")}`)
  const word = m[0]
  c.pos += word.length
  if (word === "true") return true
  if (word === "false") return false
  if (/^[+-]?(0|[1-9](_?[0-9])*)$/.test(word)) return Number(word.replace(/_/g, ""))
  if (/^0x[0-9A-Fa-f](_?[0-9A-Fa-f])*$/.test(word)) return parseInt(word.slice(2).replace(/_/g, ""), 16)
  if (/^[+-]?(0|[1-9](_?[0-9])*)(\.[0-9](_?[0-9])*)?([eE][+-]?[0-9](_?[0-9])*)?$/.test(word)) {
    return Number(word.replace(/_/g, ""))
  }
  return c.fail(`invalid value ${word} (strings need quotes)`)
}

const parseValue = (c: Cursor): TomlValue => {
  const ch = c.peek()
  if (ch === '"') return parseBasicString(c)
  if (ch === "'") return parseLiteralString(c)
  if (ch === "{") return c.fail("inline tables are not supported")
  if (ch === "[") {
    c.next()
    const items: Array<TomlValue> = []
    for (;;) {
      c.skipAll()
      if (c.done()) c.fail("unterminated array")
      if (c.peek() === "]") {
        c.next()
        return items
      }
      items.push(parseValue(c))
      c.skipAll()
      if (c.done()) c.fail("unterminated array")
      if (c.peek() === ",") c.next()
      else if (c.peek() !== "]") c.fail("expected ',' or ']' in array")
    }
  }
  return parseScalarWord(c)
}

const parseKey = (c: Cursor): string => {
  const ch = c.peek()
  if (ch === '"') return parseBasicString(c)
  if (ch === "'") return parseLiteralString(c)
  const m = /^[A-Za-z0-9_.-]+/.exec(c.text.slice(c.pos))
  if (!m) return c.fail(`expected a key, found ${JSON.stringify(ch)}`)
  if (!BARE_KEY.test(m[0])) c.fail(`dotted keys are not supported: ${m[0]}`)
  c.pos += m[0].length
  return m[0]
}

const endOfLine = (c: Cursor): void => {
  c.skipBlank()
  if (c.peek() === "#") while (!c.done() && c.peek() !== "\n") c.pos++
  if (c.peek() === "\r") c.pos++
  if (!c.done() && c.peek() !== "\n") c.fail(`unexpected ${JSON.stringify(c.peek())} after the value`)
}

const parseUnsafe = (text: string): TomlDocument => {
  const c = new Cursor(text)
  // null-prototype tables: keys such as __proto__ or constructor are plain keys here
  const table0 = (): Record<string, TomlValue> => Object.create(null) as Record<string, TomlValue>
  const doc: Record<string, Record<string, TomlValue>> = Object.create(null) as Record<string, Record<string, TomlValue>>
  doc[""] = table0()
  let section = ""
  while (!c.done()) {
    c.skipBlank()
    const ch = c.peek()
    if (ch === "\n" || ch === "\r") {
      c.next()
      continue
    }
    if (ch === "#") {
      endOfLine(c)
      continue
    }
    if (ch === "[") {
      c.next()
      if (c.peek() === "[") c.fail("arrays of tables are not supported")
      c.skipBlank()
      const name = parseKey(c)
      c.skipBlank()
      if (c.next() !== "]") c.fail("expected ']' after the section name")
      if (Object.hasOwn(doc, name)) c.fail(`section [${name}] appears twice`)
      doc[name] = table0()
      section = name
      endOfLine(c)
      continue
    }
    const key = parseKey(c)
    c.skipBlank()
    if (c.next() !== "=") c.fail(`expected '=' after ${key}`)
    c.skipBlank()
    const line = c.line
    const value = parseValue(c)
    const table = doc[section]!
    if (Object.hasOwn(table, key)) {
      throw new TomlError({ line, message: `${key} is set twice in [${section}]` })
    }
    table[key] = value
    endOfLine(c)
  }
  return doc
}

/** The parser's helpers throw `TomlError` to unwind; it never escapes this function. */
export const parseToml = (text: string): Either.Either<TomlDocument, TomlError> => {
  try {
    return Either.right(parseUnsafe(text))
  } catch (e) {
    // the parser throws only TomlError internally; anything else would be a bug worth seeing
    if (e instanceof TomlError) return Either.left(e)
    throw e
  }
}
