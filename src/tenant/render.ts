/** Plain-text output of the tenant: aligned tables and `key: value` blocks. Pure. */

/** Columns padded to their widest cell, two spaces apart; the header underlined by nothing but its place. */
export const table = (headers: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>): string => {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)))
  const line = (cells: ReadonlyArray<string>) =>
    cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join("  ").trimEnd()
  return [line(headers), ...rows.map(line)].join("\n")
}

/** `key: value` lines, keys aligned. */
export const fields = (entries: ReadonlyArray<readonly [string, string]>): string => {
  const w = Math.max(0, ...entries.map(([k]) => k.length))
  return entries.map(([k, v]) => `${`${k}:`.padEnd(w + 1)} ${v}`).join("\n")
}

/** "3 s ago", "2 min ago", "5 h ago", "4 d ago"; "never" for none. */
export const age = (nowSeconds: number, thenSeconds: number | null | undefined): string => {
  if (thenSeconds === null || thenSeconds === undefined || thenSeconds <= 0) return "never"
  const d = Math.max(0, Math.round(nowSeconds - thenSeconds))
  if (d < 120) return `${d} s ago`
  if (d < 7200) return `${Math.round(d / 60)} min ago`
  if (d < 172_800) return `${Math.round(d / 3600)} h ago`
  return `${Math.round(d / 86_400)} d ago`
}
