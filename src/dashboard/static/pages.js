// The four pages. Each `mount(main, arg)` builds its DOM once and answers `update(data)`, which the
// app calls with the page's JSON on arrival and after every live update.
import { drawChart, SERIES } from "./chart.js"
import { card, el, fmtAge, fmtEpoch, fmtTime, kv } from "./dom.js"
import { makeTable } from "./table.js"

const go = (hash) => { location.hash = hash }
const agentLink = (id) => el("a", { href: `#/agent/${encodeURIComponent(id)}`, class: "mono", text: id })
const statusCell = (s) => el("span", { class: s, text: s })

// a push agent listens on no port: it has no address
const address = (a) => (a.model === "push" ? "none (push)" : `${a.ip}:${a.port ?? ""}`)
const failureType = (a) => (a.lastEventId === null ? null : a.lastFailureReason && a.lastFailureReason !== a.lastEventId ? `${a.lastFailureReason}: ${a.lastEventId}` : a.lastEventId)
const failureText = (v) => {
  if (!v.lastEventId) return "none"
  const severity = v.model === "push" ? "" : ` (severity ${v.severityLevel ?? "?"})`
  const when = v.model === "push" && v.lastFailureAt ? `, ${fmtEpoch(v.lastFailureAt)}` : ""
  return `${failureType(v)}${severity}${v.lastEventMessage ? `: ${v.lastEventMessage}` : ""}${when}`
}

const FRESHNESS = { under_1m: "under 1 min", "1m_to_10m": "1–10 min", over_10m: "over 10 min", never: "never" }

export const overview = {
  api: () => "/api/overview",
  mount(main) {
    const cards = el("div", { class: "cards" })
    const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg")
    svg.setAttribute("data-testid", "fleet-chart")
    const legend = el("div", { class: "legend" },
      ...SERIES.map((s) => el("span", {}, el("span", { class: "swatch", style: `background:${s.color}` }), s.label)),
      el("span", {}, el("span", { class: "swatch", style: "background:#2f5fb3;opacity:.3" }), "attestations/s (right scale)"))
    const states = el("div", { class: "bars", "data-testid": "states" })
    const freshness = el("div", { class: "bars", "data-testid": "freshness" })
    // cluster mode: how many active pull agents each runner's loops took (hidden without runners)
    const runners = el("div", { class: "bars", "data-testid": "runners" })
    const runnersPanel = el("div", { class: "panel", style: "margin-top:16px;display:none" }, el("h2", { text: "Agents by runner (cluster mode)", style: "margin-top:0" }), runners)
    const table = makeTable([
      { key: "id", label: "Agent", render: (r) => agentLink(r.id) },
      { key: "model", label: "Model" },
      { key: "status", label: "Status", render: (r) => statusCell(r.status) },
      { key: "stateName", label: "State" },
      { key: "verdict", label: "Verdict" },
      { key: "ageSeconds", label: "Last success", render: (r) => fmtAge(r.ageSeconds) },
      { key: "attestationCount", label: "Attestations" },
      { key: "lastEventId", label: "Last failure", value: (r) => failureType(r) },
      { key: "address", label: "Address", value: (r) => address(r) },
      { key: "owner", label: "Runner" },
      { key: "registrar", label: "Registrar", value: (r) => (r.registered === null ? "?" : r.registered ? (r.active ? "active" : "registered") : "not registered") }
    ], { testid: "agents-table", placeholder: "Filter agents (id, state, failure type…)", rowTestid: (r) => r.id, onRow: (r) => go(`#/agent/${encodeURIComponent(r.id)}`), empty: "no agents on the verifier" })
    main.replaceChildren(
      el("h1", { text: "Fleet" }), cards,
      el("div", { class: "grid2", style: "margin-top:16px" },
        el("div", { class: "panel chart" }, el("h2", { text: "Agents over time", style: "margin-top:0" }), svg, legend),
        el("div", { class: "panel" }, el("h2", { text: "By state", style: "margin-top:0" }), states, el("h2", { text: "Last successful attestation" }), freshness)),
      runnersPanel,
      el("h2", { text: "Agents" }), table.element)
    const bars = (target, entries, total) =>
      target.replaceChildren(...(entries.length === 0 ? [el("span", { class: "muted", text: "no agents" })] : entries.map(([label, n, key]) =>
        el("div", { class: "bar", "data-key": key }, el("span", { text: label }), el("span", { class: "track" }, el("span", { class: "fill", style: `display:block;width:${total ? (100 * n) / total : 0}%` })), el("span", { "data-testid": `n-${key}`, text: String(n) })))))
    return {
      update(d) {
        const c = d.counts
        cards.replaceChildren(
          card("Agents", c.agents, "count-agents"),
          card("Passing", c.byStatus.PASS, "count-pass"),
          card("Failed", c.byStatus.FAIL, "count-fail"),
          card("Pending", c.byStatus.PENDING, "count-pending"),
          card("Failures, last hour", d.failuresLastHour, "failures-hour"),
          card("Attestations/s", d.attestationsPerSecond.toFixed(2), "rate"))
        drawChart(svg, d.series)
        bars(states, Object.entries(c.byState).sort((a, b) => b[1] - a[1]).map(([k, n]) => [d.agents.find((a) => a.stateName.toLowerCase().replace(/[^a-z0-9]+/g, "_").replace(/^_|_$/g, "") === k)?.stateName ?? k, n, `state-${k}`]), c.agents)
        bars(freshness, Object.entries(c.freshness).map(([k, n]) => [FRESHNESS[k] ?? k, n, `fresh-${k}`]), c.agents)
        const owned = Object.entries(c.byRunner ?? {}).sort((a, b) => a[0].localeCompare(b[0]))
        runnersPanel.style.display = owned.length === 0 ? "none" : ""
        bars(runners, owned.map(([runner, n]) => [runner, n, `runner-${runner}`]), owned.reduce((t, [, n]) => t + n, 0))
        table.update(d.agents)
      }
    }
  }
}

export const agent = {
  api: (id) => `/api/agents/${encodeURIComponent(id)}`,
  mount(main, id) {
    const title = el("h1", {}, "Agent ", el("span", { class: "mono", "data-testid": "agent-id", text: id }))
    const identity = el("div", { class: "panel", "data-testid": "agent-identity" })
    const policies = el("div", { class: "panel", "data-testid": "agent-policies" })
    const pcrs = el("div", { class: "panel", "data-testid": "agent-pcrs" })
    const timeline = makeTable([
      { key: "t", label: "Time", render: (r) => fmtTime(r.t) },
      { key: "kind", label: "Event", cls: (r) => `kind-${r.kind}` },
      { key: "type", label: "Failure type" },
      { key: "severity", label: "Severity" },
      { key: "message", label: "Message", cls: () => "wrap" }
    ], { testid: "timeline", placeholder: "Filter events", initialSort: "t", initialDir: -1, empty: "nothing observed yet (the dashboard records changes while it runs)" })
    main.replaceChildren(title,
      el("div", { class: "grid2" }, identity, el("div", {}, policies, el("div", { style: "height:12px" }), pcrs)),
      el("h2", { text: "Timeline (newest first)" }), timeline.element)
    return {
      update(d) {
        const v = d.verifier
        const r = d.registrar
        identity.replaceChildren(el("h2", { text: "Identity and state", style: "margin-top:0" }), kv([
          ["Model", v ? (v.model === "push" ? "push (sends its evidence, API 3.0)" : "pull (the verifier asks it for quotes)") : "—"],
          ["Status", v ? statusCell(v.status) : "not on the verifier"],
          ["State", v ? (v.model === "push" ? `${v.acceptance ?? "?"} (acceptance of its attestations)` : `${v.stateName} (${v.state})`) : "—"],
          ["Latest verdict", v ? `${v.verdict}${v.model === "push" && v.lastAttestationIndex !== null ? ` (attestation ${v.lastAttestationIndex})` : ""}` : "—"],
          ["Address", v ? address(v) : r?.ip ? `${r.ip}:${r.port ?? ""}` : "—"],
          ["Attestations", v?.attestationCount],
          ["Last success", v ? `${fmtEpoch(v.lastSuccess)} (${fmtAge(v.ageSeconds)})` : "—"],
          ...(v && v.sinceVerifiedSeconds !== null && v.sinceVerifiedSeconds !== undefined
            ? [["Since verified quote", el("span", { "data-testid": "since-verified", text: `${v.sinceVerifiedSeconds} s (the verifier's count${v.lastSuccess === null ? ", from its creation" : ""})` })]]
            : []),
          ...(v && v.model === "pull" ? [["Runner", el("span", { "data-testid": "agent-runner", text: v.ownerRunner ?? "none (single-process verifier, or not taken yet)" })]] : []),
          [v?.model === "push" ? "Last attestation" : "Last quote", v ? fmtEpoch(v.lastReceivedQuote) : "—"],
          ["Last failure", v ? failureText(v) : "none"],
          ["Algorithms", v ? [v.hashAlg, v.encAlg, v.signAlg].filter((x) => x).join(", ") || "not negotiated yet" : "—"],
          ["Verifier id", v?.verifierId],
          ["Registrar", r === null ? "not registered" : r.active ? `active, registered ${r.regcount ?? "?"} time(s)` : `registered, not active${r.error ? ` (${r.error})` : ""}`],
          ["EK certificate issuer", r?.ekIssuer ?? (r ? "no EK certificate" : "—")],
          ["Metadata", v?.metaData]
        ]))
        const p = d.policies
        policies.replaceChildren(el("h2", { text: "Policies in use", style: "margin-top:0" }), p === null ? el("p", { class: "muted", text: "not on the verifier" }) : kv([
          ["Runtime (IMA)", p.runtime ?? "none"],
          ["Measured boot", p.measuredBoot ?? "none"],
          ["tpm_policy", el("code", { text: p.tpmPolicy || "{}" })]
        ]))
        const values = v?.pcrs
        pcrs.replaceChildren(el("h2", { text: "PCR values of the last quote", style: "margin-top:0" }),
          values && Object.keys(values).length > 0
            ? el("table", {}, el("tbody", {}, ...Object.entries(values).sort((a, b) => Number(a[0]) - Number(b[0])).map(([k, x]) => el("tr", {}, el("td", { text: `PCR ${k}` }), el("td", { class: "mono", text: x })))))
            : el("p", { class: "muted", text: "The verifier does not report the PCR values of the last quote." }))
        timeline.update(d.timeline)
      }
    }
  }
}

export const policies = {
  api: () => "/api/policies",
  mount(main) {
    const note = el("p", { class: "muted" })
    const table = makeTable([
      { key: "kind", label: "Kind", value: (r) => (r.kind === "runtime" ? "runtime (IMA)" : "measured boot") },
      { key: "name", label: "Name", render: (r) => el("span", { class: "mono", text: r.name }) },
      { key: "count", label: "Agents", value: (r) => (r.agents === null ? null : r.agents.length) },
      { key: "agents", label: "Used by", value: (r) => (r.agents === null ? "not reported by the verifier" : r.agents.join(" ")), render: (r) => r.agents === null ? el("span", { class: "muted", text: "not reported by the verifier" }) : el("span", {}, ...r.agents.flatMap((id, i) => [i ? " " : "", agentLink(id)])), cls: () => "wrap" }
    ], { testid: "policies-table", placeholder: "Filter policies", initialSort: "name", empty: "no named policies on the verifier" })
    main.replaceChildren(el("h1", { text: "Policies" }), note, table.element)
    return {
      update(d) {
        note.textContent = `${d.agentsWithRuntimePolicy} agent(s) have a runtime policy, ${d.agentsWithMbPolicy} a measured-boot policy.` +
          (d.usersKnown ? "" : " The verifier's status does not name each agent's policies, so the agents of a named policy are not listed.")
        table.update(d.policies)
      }
    }
  }
}

export const registrar = {
  api: () => "/api/registrar",
  mount(main) {
    const cards = el("div", { class: "cards" })
    const table = makeTable([
      { key: "id", label: "Agent", render: (r) => agentLink(r.id) },
      { key: "active", label: "Active", value: (r) => (r.active ? "yes" : "no") },
      { key: "regcount", label: "Registrations" },
      { key: "address", label: "Address", value: (r) => (r.ip ? `${r.ip}:${r.port ?? ""}` : null) },
      { key: "ekIssuer", label: "EK certificate issuer", cls: () => "wrap" },
      { key: "onVerifier", label: "On verifier", value: (r) => (r.onVerifier ? "yes" : "no") },
      { key: "error", label: "Note" }
    ], { testid: "registrar-table", placeholder: "Filter registrations", empty: "no agents registered" })
    main.replaceChildren(el("h1", { text: "Registrar" }), cards, el("h2", { text: "Registered agents" }), table.element)
    return {
      update(d) {
        cards.replaceChildren(card("Registered", d.counts.registered, "count-registered"), card("Active", d.counts.active, "count-active"))
        table.update(d.agents)
      }
    }
  }
}
