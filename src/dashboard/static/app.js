// The dashboard's page: a hash router over four pages (pages.js), the JSON of the page's view
// from the local dashboard server, and live updates from its Server-Sent Events stream. The
// server holds the credentials; this page only ever talks to it.
import { el } from "./dom.js"
import * as pages from "./pages.js"

const main = document.getElementById("main")
const banner = document.getElementById("banner")
const live = document.getElementById("live")
let current = null

const route = () => {
  const h = decodeURIComponent(location.hash.replace(/^#/, ""))
  const m = /^\/agent\/(.+)$/.exec(h)
  if (m) return { page: pages.agent, arg: m[1], nav: "overview" }
  if (h === "/policies") return { page: pages.policies, nav: "policies" }
  if (h === "/registrar") return { page: pages.registrar, nav: "registrar" }
  return { page: pages.overview, nav: "overview" }
}

const showServices = (services, extra) => {
  const lines = []
  if (extra) lines.push(extra)
  for (const [name, s] of Object.entries(services ?? {})) {
    if (!s.ok) lines.push(`The ${name} at ${s.url} is unreachable: ${s.error}${s.failingSince ? ` (since ${new Date(s.failingSince).toLocaleTimeString()}; showing the last data read)` : ""}`)
  }
  banner.replaceChildren(...lines.map((l) => el("div", { "data-testid": "service-error", text: l })))
}

let loading = false
let again = false
const refresh = async () => {
  if (loading) { again = true; return }
  loading = true
  const mine = current
  try {
    const res = await fetch(mine.page.api(mine.arg), { headers: { accept: "application/json" } })
    const data = await res.json()
    if (mine !== current) return
    if (!res.ok) {
      showServices(data.services, data.error ?? `HTTP ${res.status}`)
      return
    }
    showServices(data.services)
    mine.view.update(data)
    main.dataset.version = String(data.version)
  } catch (e) {
    showServices({}, `The dashboard server does not answer (${e.message}); retrying.`)
  } finally {
    loading = false
    if (again) { again = false; refresh() }
  }
}

const navigate = () => {
  const r = route()
  for (const a of document.querySelectorAll("[data-nav]")) a.classList.toggle("active", a.dataset.nav === r.nav)
  current = { ...r, view: r.page.mount(main, r.arg) }
  refresh()
}

const connect = () => {
  const source = new EventSource("/api/events")
  source.addEventListener("version", () => refresh())
  source.onopen = () => { live.textContent = "live"; live.className = "live on" }
  // EventSource reconnects by itself; meanwhile poll so the page keeps moving
  let poll = null
  source.onerror = () => {
    live.textContent = "reconnecting"
    live.className = "live off"
    if (poll === null) poll = setInterval(refresh, 5000)
  }
  source.addEventListener("open", () => { if (poll !== null) { clearInterval(poll); poll = null } })
}

window.addEventListener("hashchange", navigate)
navigate()
connect()
