/**
 * JSON text as Python's `json.dumps` writes it with its defaults: `", "` and `": "` separators and
 * every character outside printable ASCII escaped (`ensure_ascii`). Keylime puts failure contexts
 * into text this way (verify/identity's `reason`, revocation messages), and clients compare it.
 */

const escapeNonAscii = (s: string): string =>
  s.replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`)

export const pythonJsonDumps = (value: unknown): string => {
  if (value === null || value === undefined) return "null"
  switch (typeof value) {
    case "string":
      return escapeNonAscii(JSON.stringify(value))
    case "number":
      return Number.isFinite(value) ? JSON.stringify(value) : value > 0 ? "Infinity" : value < 0 ? "-Infinity" : "NaN"
    case "boolean":
      return value ? "true" : "false"
    case "bigint":
      return value.toString()
    case "object": {
      if (Array.isArray(value)) return `[${value.map(pythonJsonDumps).join(", ")}]`
      const parts: Array<string> = []
      for (const [k, v] of Object.entries(value)) if (v !== undefined) parts.push(`${escapeNonAscii(JSON.stringify(k))}: ${pythonJsonDumps(v)}`)
      return `{${parts.join(", ")}}`
    }
    default:
      return "null"
  }
}
