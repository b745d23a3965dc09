/** Values as Nix source text, for the generated files of the NixOS module. */

/** A Nix double-quoted string: `\`, `"` and `${` escaped, control characters as escapes. */
export const nixString = (s: string): string =>
  `"${s.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\$\{/g, "\\${").replace(/\n/g, "\\n").replace(/\r/g, "\\r").replace(/\t/g, "\\t")}"`

/** An attribute name: bare when Nix allows it, quoted otherwise (`"push-agent"`). */
export const nixName = (s: string): string => (/^[A-Za-z_][A-Za-z0-9_'-]*$/.test(s) ? s : nixString(s))

export type NixValue = string | number | boolean | ReadonlyArray<NixValue> | { readonly [k: string]: NixValue }

const nixNumber = (n: number): string => {
  if (!Number.isFinite(n)) throw new Error(`no Nix literal for ${n}`)
  const text = String(n)
  // Nix reads 1.5 and 2 but not 1e+21: such a default would need another rendering
  if (!/^-?\d+(\.\d+)?$/.test(text)) throw new Error(`no plain Nix literal for ${text}`)
  return text
}

/** A Nix expression for a JSON-like value; attribute sets one attribute per line at `indent`. */
export const nixValue = (v: NixValue, indent = ""): string => {
  if (typeof v === "string") return nixString(v)
  if (typeof v === "number") return nixNumber(v)
  if (typeof v === "boolean") return v ? "true" : "false"
  if (Array.isArray(v)) return v.length === 0 ? "[ ]" : `[ ${v.map((x) => nixValue(x, indent)).join(" ")} ]`
  const entries = Object.entries(v as { readonly [k: string]: NixValue })
  if (entries.length === 0) return "{ }"
  const inner = `${indent}  `
  return `{\n${entries.map(([k, x]) => `${inner}${nixName(k)} = ${nixValue(x, inner)};`).join("\n")}\n${indent}}`
}
