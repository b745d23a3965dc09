// A table that sorts (click a header; again to reverse) and filters (a text box matching any
// cell's text), keeping its sort, filter and the filter box's focus across live updates: the page
// calls `update(rows)` and only the body is redrawn.
import { el } from "./dom.js"

/**
 * columns: [{ key, label, value?: row => sortable, render?: row => Node|string, cls?: row => string }]
 * options: { testid, placeholder, rowTestid?: row => string, onRow?: row => void, initialSort?: key, initialDir?: 1 | -1, empty?: string }
 */
export const makeTable = (columns, options) => {
  const state = { sortKey: options.initialSort ?? columns[0].key, dir: options.initialDir ?? 1, filter: "", rows: [] }
  const input = el("input", { type: "search", placeholder: options.placeholder ?? "Filter", "data-testid": `${options.testid}-filter`, "aria-label": "filter" })
  const count = el("span", { class: "muted", "data-testid": `${options.testid}-count` })
  const headRow = el("tr")
  const tbody = el("tbody")
  const table = el("table", { "data-testid": options.testid }, el("thead", {}, headRow), tbody)
  const valueOf = (c, r) => (c.value ? c.value(r) : r[c.key])
  const draw = () => {
    headRow.replaceChildren(...columns.map((c) =>
      el("th", {
        "data-key": c.key,
        "aria-sort": state.sortKey === c.key ? (state.dir > 0 ? "ascending" : "descending") : "none",
        onclick: () => {
          state.dir = state.sortKey === c.key ? -state.dir : 1
          state.sortKey = c.key
          draw()
        }
      }, c.label)
    ))
    const needle = state.filter.trim().toLowerCase()
    const col = columns.find((c) => c.key === state.sortKey) ?? columns[0]
    const rows = state.rows
      .map((r) => ({ r, texts: columns.map((c) => String(valueOf(c, r) ?? "")).join(" ").toLowerCase() }))
      .filter((x) => needle === "" || x.texts.includes(needle))
      .map((x) => x.r)
      .sort((a, b) => {
        const x = valueOf(col, a)
        const y = valueOf(col, b)
        if (x === y) return 0
        if (x === null || x === undefined) return 1
        if (y === null || y === undefined) return -1
        return (typeof x === "number" && typeof y === "number" ? x - y : String(x).localeCompare(String(y))) * state.dir
      })
    count.textContent = `${rows.length} of ${state.rows.length}`
    tbody.replaceChildren(...(rows.length === 0
      ? [el("tr", {}, el("td", { colspan: columns.length, class: "muted", text: state.rows.length === 0 ? (options.empty ?? "nothing to show") : "nothing matches the filter" }))]
      : rows.map((r) =>
        el("tr", {
          class: options.onRow ? "link" : undefined,
          "data-row": options.rowTestid ? options.rowTestid(r) : undefined,
          onclick: options.onRow ? () => options.onRow(r) : undefined
        }, ...columns.map((c) => {
          const content = c.render ? c.render(r) : valueOf(c, r)
          return el("td", { class: c.cls ? c.cls(r) : undefined }, content === null || content === undefined ? "—" : content)
        }))
      )))
  }
  input.addEventListener("input", () => {
    state.filter = input.value
    draw()
  })
  draw()
  return {
    element: el("div", {}, el("div", { class: "tools" }, input, count), table),
    update(rows) {
      state.rows = rows
      draw()
    }
  }
}
