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

export const parseToml = (text: string): Either.Either<TomlDocument, TomlError> => {
  let parsed: Record<string, unknown>
  try {
    parsed = parse(text, { integersAsBigInt: "asNeeded" })
  } catch (e) {
    if (e instanceof SmolTomlError) return Either.left(new TomlError({ line: e.line, column: e.column, message: shortMessage(e.message) }))
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
