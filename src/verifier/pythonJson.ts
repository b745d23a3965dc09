/**
 * Two small pieces of Python's json module that Keylime's peers see: `json.dumps` output (", " and
 * ": " separators, ASCII-only with \uXXXX escapes; the revocation message is signed over this text)
 * and the position json.loads reports for "Expecting value" (a recorded status text quotes it).
 */

const escapeString = (s: string): string => {
  let out = "\""
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    const ch = s[i]!
    if (ch === "\"") out += "\\\""
    else if (ch === "\\") out += "\\\\"
    else if (ch === "\n") out += "\\n"
    else if (ch === "\r") out += "\\r"
    else if (ch === "\t") out += "\\t"
    else if (ch === "\b") out += "\\b"
    else if (ch === "\f") out += "\\f"
    else if (c < 0x20 || c > 0x7e) out += `\\u${c.toString(16).padStart(4, "0")}`
    else out += ch
  }
  return out + "\""
}

/** Python's `json.dumps(value)` for JSON data (objects keep insertion order). */
export const pythonJsonDumps = (value: unknown): string => {
  if (value === null || value === undefined) return "null"
  if (typeof value === "string") return escapeString(value)
  if (typeof value === "boolean") return value ? "true" : "false"
  if (typeof value === "number") {
    if (Number.isNaN(value)) return "NaN"
    if (!Number.isFinite(value)) return value > 0 ? "Infinity" : "-Infinity"
    return String(value)
  }
  if (typeof value === "bigint") return value.toString()
  if (Array.isArray(value)) return `[${value.map(pythonJsonDumps).join(", ")}]`
  if (typeof value === "object") {
    const parts: Array<string> = []
    for (const [k, v] of Object.entries(value)) if (v !== undefined) parts.push(`${escapeString(k)}: ${pythonJsonDumps(v)}`)
    return `{${parts.join(", ")}}`
  }
  return "null"
}

const NUMBER_START = /^-?(?:0|[1-9]\d*)/
const WORDS = ["null", "true", "false", "NaN", "Infinity", "-Infinity"]

/**
 * Where json.loads(text) fails with "Expecting value" because no JSON value starts at the first
 * non-blank character (e.g. "not json"); undefined when the document starts a value (its errors, if
 * any, are elsewhere and Python words them differently).
 */
export const pythonExpectingValueAt = (
  text: string
): { readonly line: number; readonly column: number; readonly char: number } | undefined => {
  let pos = 0
  while (pos < text.length && " \t\n\r".includes(text[pos]!)) pos++
  const rest = text.slice(pos)
  const startsValue = rest.length > 0 &&
    ("\"{[".includes(rest[0]!) || NUMBER_START.test(rest) || WORDS.some((w) => rest.startsWith(w)))
  if (startsValue) return undefined
  const before = text.slice(0, pos)
  const lastNewline = before.lastIndexOf("\n")
  const line = before.split("\n").length
  const column = lastNewline < 0 ? pos + 1 : pos - lastNewline
  return { line, column, char: pos }
}
