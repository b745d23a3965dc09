// The fleet chart: inline SVG drawn from the samples the dashboard server keeps (agents passing,
// failing, pending as lines; attestations per second as a bar series on its own scale).
const NS = "http://www.w3.org/2000/svg"
const svgEl = (tag, attrs) => {
  const e = document.createElementNS(NS, tag)
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v))
  return e
}

export const SERIES = [
  { key: "pass", label: "passing", color: "#1a7f37" },
  { key: "fail", label: "failed", color: "#c62828" },
  { key: "pending", label: "pending", color: "#9a6700" }
]

export const drawChart = (svg, samples) => {
  const W = 800
  const H = 180
  const pad = { l: 36, r: 40, t: 10, b: 20 }
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`)
  svg.setAttribute("preserveAspectRatio", "none")
  svg.replaceChildren()
  if (samples.length === 0) return
  const t0 = samples[0].t
  const t1 = Math.max(samples[samples.length - 1].t, t0 + 1)
  const maxAgents = Math.max(1, ...samples.map((s) => Math.max(s.pass, s.fail, s.pending)))
  const maxRate = Math.max(0.001, ...samples.map((s) => s.rate))
  const x = (t) => pad.l + ((t - t0) / (t1 - t0)) * (W - pad.l - pad.r)
  const y = (v, max) => H - pad.b - (v / max) * (H - pad.t - pad.b)
  for (const frac of [0, 0.5, 1]) {
    const yy = y(frac * maxAgents, maxAgents)
    svg.append(svgEl("line", { x1: pad.l, x2: W - pad.r, y1: yy, y2: yy, stroke: "#e3e6eb" }))
    const label = svgEl("text", { x: pad.l - 6, y: yy + 4, "text-anchor": "end", "font-size": 11, fill: "#6b7280" })
    label.textContent = String(Math.round(frac * maxAgents))
    svg.append(label)
  }
  const bw = Math.max(1, (W - pad.l - pad.r) / Math.max(samples.length, 1) - 1)
  for (const s of samples) {
    if (s.rate <= 0) continue
    svg.append(svgEl("rect", { x: x(s.t) - bw / 2, y: y(s.rate, maxRate), width: bw, height: H - pad.b - y(s.rate, maxRate), fill: "#2f5fb3", opacity: 0.18 }))
  }
  const rateLabel = svgEl("text", { x: W - pad.r + 4, y: pad.t + 10, "font-size": 11, fill: "#2f5fb3" })
  rateLabel.textContent = `${maxRate.toFixed(maxRate < 10 ? 1 : 0)}/s`
  svg.append(rateLabel)
  for (const series of SERIES) {
    const points = samples.map((s) => `${x(s.t).toFixed(1)},${y(s[series.key], maxAgents).toFixed(1)}`).join(" ")
    svg.append(svgEl("polyline", { points, fill: "none", stroke: series.color, "stroke-width": 2, "data-series": series.key }))
  }
  const from = svgEl("text", { x: pad.l, y: H - 4, "font-size": 11, fill: "#6b7280" })
  from.textContent = new Date(t0).toLocaleTimeString()
  const to = svgEl("text", { x: W - pad.r, y: H - 4, "font-size": 11, fill: "#6b7280", "text-anchor": "end" })
  to.textContent = new Date(t1).toLocaleTimeString()
  svg.append(from, to)
}
