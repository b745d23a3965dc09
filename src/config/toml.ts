/**
 * Config files are TOML 1.0, read by smol-toml (complete and maintained): inline tables, dotted
 * keys, every string form, dates. This module turns its result into the shape the loader checks:
 * section → option → value, with dates as their RFC 3339 text and nested tables kept as tables
 * (so an option schema reports "expected a string, got {…}" and an unknown key is named).
 */
import { Data, Either } from "effect"
import { parse, TomlDate, TomlError as SmolTomlError } from "smol-toml"

export interface TomlTable {
  readonly [key: string]: TomlValue
}
export type TomlValue = string | number | boolean | ReadonlyArray<TomlValue> | TomlTable
/** Section name → key → value; keys that are not tables at the top level are under "". */
export type TomlDocument = Readonly<Record<string, TomlTable>>

export class TomlError extends Data.TaggedError("TomlError")<{
  readonly line: number
  readonly column: number
  readonly message: string
}> {}

// null-prototype tables: keys such as __proto__ or constructor are plain keys here
const table = (): Record<string, TomlValue> => Object.create(null) as Record<string, TomlValue>

export const isTable = (v: TomlValue): v is TomlTable =>
  typeof v === "object" && v !== null && !Array.isArray(v)

const convert = (v: unknown): TomlValue => {
  if (typeof v === "string" || typeof v === "number" || typeof v === "boolean") return v
  // integers beyond 2^53 (parsed as bigint to stay lossless) keep their digits as text
  if (typeof v === "bigint") return v.toString()
  // TomlDate prints its own TOML form: offset/local date-time, local date or local time
  if (v instanceof TomlDate) return v.toISOString()
  if (Array.isArray(v)) return v.map(convert)
  const out = table()
  for (const [k, x] of Object.entries(v as Record<string, unknown>)) out[k] = convert(x)
  return out
}

/** The library's message without its code excerpt ("Invalid TOML document: …\n\n2: x = 1 …"). */
const shortMessage = (m: string): string => (m.split("\n")[0] ?? m).replace(/^Invalid TOML document: /, "")

/**
 * Where a value opened on an earlier line is still open at `upTo` (an array or inline table never
 * closed, which the parser reports where it gives up, lines later): the line it opened on and what
 * it lacks. Strings and comments are skipped.
 */
const unclosedOpening = (lines: ReadonlyArray<string>, upTo: number): { readonly line: number; readonly closer: string } | undefined => {
  const open: Array<{ readonly line: number; readonly closer: string }> = []
  for (let i = 0; i < Math.min(upTo, lines.length); i++) {
    const l = lines[i]!
    // a table header is not a value
    if (open.length === 0 && /^\s*\[/.test(l)) continue
    let quote: string | null = null
    for (let j = 0; j < l.length; j++) {
      const ch = l[j]!
      if (quote !== null) {
        if (ch === "\\" && quote === "\"") j++
        else if (ch === quote) quote = null
        continue
      }
      if (ch === "#") break
      if (ch === "\"" || ch === "'") quote = ch
      else if (ch === "[" || ch === "{") open.push({ line: i + 1, closer: ch === "[" ? "]" : "}" })
      else if (ch === "]" || ch === "}") open.pop()
    }
  }
  return open[0]
}

/**
 * A syntax error as a person fixes it: the line and what is missing there when the line says it
 * (a table header without its `]`, an option without a value, a string without its closing quote,
 * an array or inline table never closed, named at the line it opens on), else the parser's words at
 * its line and column; the line itself is quoted.
 */
export const explainTomlError = (text: string, line: number, column: number, parserMessage: string): { readonly line: number; readonly message: string } => {
  const lines = text.split("\n")
  const quoted = (n: number) => `: ${(lines[n - 1] ?? "").trim()}`
  const here = (lines[line - 1] ?? "").replace(/\s+#.*$/, "").trim()
  if (/^\[[^\]]*$/.test(here)) return { line, message: `the table header is missing its closing ]${quoted(line)}` }
  const assignment = /^([A-Za-z0-9_.-]+|"[^"]*")\s*=\s*(.*)$/.exec(here)
  if (assignment !== null && assignment[2] === "") return { line, message: `${assignment[1]} has no value after =${quoted(line)}` }
  if (assignment !== null && /^"(?:[^"\\]|\\.)*$/.test(assignment[2]!) && !assignment[2]!.startsWith("\"\"\"")) {
    return { line, message: `the string is missing its closing "${quoted(line)}` }
  }
  if (assignment !== null && /^'[^']*$/.test(assignment[2]!) && !assignment[2]!.startsWith("\'\'\'")) {
    return { line, message: `the string is missing its closing '${quoted(line)}` }
  }
  const opening = unclosedOpening(lines, line)
  if (opening !== undefined && opening.line < line) {
    return { line: opening.line, message: `the ${opening.closer === "]" ? "array" : "inline table"} that starts here is missing its closing ${opening.closer}${quoted(opening.line)}` }
  }
  return { line, message: `column ${column}: ${parserMessage}${quoted(line)}` }
}

export const parseToml = (text: string): Either.Either<TomlDocument, TomlError> => {
  let parsed: Record<string, unknown>
  try {
    parsed = parse(text, { integersAsBigInt: "asNeeded" })
  } catch (e) {
    if (e instanceof SmolTomlError) {
      const explained = explainTomlError(text, e.line, e.column, shortMessage(e.message))
      return Either.left(new TomlError({ line: explained.line, column: e.column, message: explained.message }))
    }
    // anything else would be a bug in the library worth seeing
    throw e
  }
  const doc: Record<string, TomlTable> = Object.create(null) as Record<string, TomlTable>
  const top = table()
  doc[""] = top
  for (const [key, value] of Object.entries(parsed)) {
    const v = convert(value)
    if (isTable(v)) doc[key] = v
    else top[key] = v
  }
  return Either.right(doc)
}

/**
 * The line of `option` in `[section]`, when it is written plainly (`option = …` after the
 * `[section]` header), for error messages; undefined for dotted or inline forms.
 */
export const lineOf = (text: string, section: string, option: string): number | undefined => {
  const lines = text.split("\n")
  let current = ""
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i]!.trim()
    const header = /^\[\s*([A-Za-z0-9_-]+|"[^"]*")\s*\](\s*#.*)?$/.exec(l)
    if (header) {
      current = header[1]!.replace(/^"|"$/g, "")
      continue
    }
    if (current !== section) continue
    const key = /^([A-Za-z0-9_-]+|"[^"]*"|'[^']*')\s*=/.exec(l)
    if (key && key[1]!.replace(/^["']|["']$/g, "") === option) return i + 1
  }
  return undefined
}
