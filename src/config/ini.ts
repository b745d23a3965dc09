/**
 * Keylime's INI configuration files as Python's `configparser.RawConfigParser` reads them (Keylime
 * 7 uses RawConfigParser, so `%` is literal: no `%(name)s` interpolation): `[section]` headers,
 * `key = value` or `key: value` (split at the first `=` or `:`), option names lower-cased, values
 * stripped, whole-line `#` and `;` comments (no inline comments), indented continuation lines
 * joined with newlines (blank lines inside kept, trailing ones dropped), `[DEFAULT]` options seen in
 * every section, and a duplicate section or option within one file refused as Python refuses it.
 */
import { Data, Either } from "effect"

export interface IniValue {
  readonly value: string
  /** 1-based line of the `key = value` line. */
  readonly line: number
}

/** Section → option → value, in file order; `DEFAULT` options are already merged into each section. */
export type IniDocument = ReadonlyMap<string, ReadonlyMap<string, IniValue>>

export class IniError extends Data.TaggedError("IniError")<{
  readonly line: number
  readonly message: string
}> {}

const COMMENT = /^\s*[#;]/
const OPTION = /^(.*?)\s*[=:]\s*(.*)$/
const indentOf = (l: string) => l.length - l.trimStart().length

export const parseIni = (text: string): Either.Either<IniDocument, IniError> => {
  const sections = new Map<string, Map<string, { value: Array<string>; line: number }>>()
  let section: Map<string, { value: Array<string>; line: number }> | undefined
  let sectionName = ""
  let current: { value: Array<string>; line: number } | undefined
  let optionIndent = 0
  const lines = text.replace(/^\uFEFF/, "").split(/\r?\n/)
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i]!
    const lineNo = i + 1
    if (COMMENT.test(raw)) continue // a comment neither ends nor extends a value
    if (raw.trim() === "") {
      current?.value.push("")
      continue
    }
    const indent = indentOf(raw)
    if (current !== undefined && indent > optionIndent) {
      current.value.push(raw.trim())
      continue
    }
    const stripped = raw.trim()
    if (stripped.startsWith("[")) {
      const close = stripped.lastIndexOf("]")
      if (close <= 1) return Either.left(new IniError({ line: lineNo, message: `malformed section header ${stripped}` }))
      sectionName = stripped.slice(1, close)
      if (sections.has(sectionName)) return Either.left(new IniError({ line: lineNo, message: `section [${sectionName}] appears twice` }))
      section = new Map()
      sections.set(sectionName, section)
      current = undefined
      continue
    }
    const m = OPTION.exec(stripped)
    if (m === null || m[1] === "") {
      return Either.left(new IniError({ line: lineNo, message: `expected 'option = value', found ${JSON.stringify(stripped)}` }))
    }
    if (section === undefined) {
      return Either.left(new IniError({ line: lineNo, message: `option ${m[1]} comes before any [section] header` }))
    }
    const name = m[1]!.toLowerCase()
    if (section.has(name)) return Either.left(new IniError({ line: lineNo, message: `option ${name} is set twice in [${sectionName}]` }))
    current = { value: [m[2]!], line: lineNo }
    optionIndent = indent
    section.set(name, current)
  }
  const joined = new Map<string, Map<string, IniValue>>()
  const defaults = sections.get("DEFAULT")
  for (const [name, options] of sections) {
    if (name === "DEFAULT") continue
    const out = new Map<string, IniValue>()
    for (const [k, v] of [...(defaults ?? []), ...options]) out.set(k, { value: v.value.join("\n").trimEnd(), line: v.line })
    joined.set(name, out)
  }
  return Either.right(joined)
}
