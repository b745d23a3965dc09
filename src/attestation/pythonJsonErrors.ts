/**
 * Where Python's json.loads reports "Expecting value": a recorded status text quotes that position
 * (`ver-add-runtime-policy-not-json`), so attest words the same refusal the same way.
 */

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
