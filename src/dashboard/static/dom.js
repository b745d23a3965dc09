// Small DOM helpers: elements are built with textContent only (agent ids, failure types and
// messages come from the network and are never parsed as HTML).
export const el = (tag, attrs = {}, ...children) => {
  const e = document.createElement(tag)
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue
    if (k === "class") e.className = v
    else if (k === "text") e.textContent = v
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v)
    else e.setAttribute(k, v === true ? "" : String(v))
  }
  for (const c of children.flat()) if (c !== null && c !== undefined && c !== false) e.append(c instanceof Node ? c : String(c))
  return e
}

export const fmtTime = (ms) => (ms === null || ms === undefined ? "—" : new Date(ms).toLocaleTimeString())
export const fmtEpoch = (sec) => (sec === null || sec === undefined ? "never" : new Date(sec * 1000).toLocaleString())
export const fmtAge = (s) => {
  if (s === null || s === undefined) return "never"
  if (s < 60) return `${s}s ago`
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s ago`
  if (s < 86400) return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m ago`
  return `${Math.floor(s / 86400)}d ago`
}

export const card = (label, value, testid) =>
  el("div", { class: "card" }, el("div", { class: "label", text: label }), el("div", { class: "value", "data-testid": testid, text: String(value) }))

export const kv = (pairs) => el("dl", { class: "kv" }, ...pairs.flatMap(([k, v]) => [el("dt", { text: k }), el("dd", {}, v instanceof Node ? v : String(v ?? "—"))]))
