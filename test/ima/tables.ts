/** Name tables as plain data, and the compile before the flat tables (Maps of Sets), as the oracle they must agree with. */
import type { NameTable } from "../../src/ima/nameTable.js"

/** name → sorted hex digests, names sorted: two tables with the same contents give equal values. */
export const tableOf = (t: NameTable): Array<[string, Array<string>]> =>
  [...t.entries()].map(([name, ds]): [string, Array<string>] => [name, typeof ds === "string" ? [ds] : [...ds].sort()]).sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))

/** The previous compile: each name's digests as a Set of bare lower-case hex. */
export const oldCompile = (rec: Readonly<Record<string, ReadonlyArray<string>>>): Map<string, Set<string>> =>
  new Map(Object.entries(rec).map(([k, v]) => [k, new Set(v.map((d) => d.slice(d.indexOf(":") + 1).toLowerCase()))]))

/** The old verdict for an entry digest (hex): listed name and digest. */
export const oldAllows = (old: Map<string, Set<string>>, name: string, hex: string): boolean => old.get(name)?.has(hex) ?? false

/** The new verdict through the engine's calls. */
export const newAllows = (t: NameTable, name: string, hex: string): boolean => {
  let h = 0x811c9dc5
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 0x01000193)
  const row = t.lookupRow(name, 0, name.length, h & 0x3fffffff)
  const bytes = Buffer.from(hex, "hex")
  return row >= 0 && t.allows(row, bytes, 0, bytes.length)
}
