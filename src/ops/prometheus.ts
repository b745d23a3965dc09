/**
 * The Prometheus text exposition format, version 0.0.4, written from `Metric.snapshot` (Effect's one
 * metric registry; nothing is counted twice):
 *
 *   # HELP <name> <help, with \ and newline escaped>
 *   # TYPE <name> counter|gauge|histogram|summary
 *   <name>{<label>="<value, with \ " and newline escaped>",…} <value>
 *
 * Families are sorted by name and series by labels, so a scrape is stable. Histograms give one
 * cumulative `<name>_bucket{le="…"}` per boundary ending in `le="+Inf"`, then `<name>_sum` and
 * `<name>_count`; summaries give `{quantile="…"}` series, `_sum` and `_count`; a frequency is a
 * counter family with the occurrence as its `key` label. A gauge whose value is NaN is a retired
 * series (Effect's registry cannot remove one: src/ops/metrics.ts sets NaN when an agent is
 * deleted) and is left out.
 *
 * `scrapePrometheus` is what `GET /metrics` answers: the reads registered with `onScrapeRead` run
 * (a gauge read from the database when asked, not polled: an idle process does not wake for it),
 * the scrape hooks bring time-derived gauges up to date (an agent's seconds since its last
 * success), then the registry is snapshotted and rendered.
 */
import { Clock, Effect, Metric, type MetricPair, MetricState, Option } from "effect"

export const PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/

/** A metric name as Prometheus accepts it (anything else becomes `_`). */
export const metricName = (name: string): string => (NAME.test(name) ? name : name.replace(/^[^a-zA-Z_:]/, "_").replace(/[^a-zA-Z0-9_:]/g, "_"))

export const labelName = (name: string): string => {
  const clean = LABEL.test(name) ? name : name.replace(/^[^a-zA-Z_]/, "_").replace(/[^a-zA-Z0-9_]/g, "_")
  // names beginning with __ are reserved for Prometheus itself
  return clean.startsWith("__") ? `x${clean}` : clean
}

export const escapeHelp = (text: string): string => text.replace(/\\/g, "\\\\").replace(/\n/g, "\\n")

export const escapeLabelValue = (text: string): string => text.replace(/\\/g, "\\\\").replace(/"/g, "\\\"").replace(/\n/g, "\\n")

/** Go's float syntax as Prometheus parses it. */
export const formatValue = (n: number | bigint): string => {
  if (typeof n === "bigint") return n.toString()
  if (Number.isNaN(n)) return "NaN"
  if (n === Number.POSITIVE_INFINITY) return "+Inf"
  if (n === Number.NEGATIVE_INFINITY) return "-Inf"
  return String(n)
}

type Labels = ReadonlyArray<readonly [string, string]>

const renderLabels = (labels: Labels): string =>
  labels.length === 0 ? "" : `{${labels.map(([k, v]) => `${k}="${escapeLabelValue(v)}"`).join(",")}}`

interface Series {
  /** The rendered label set: the sort key. */
  readonly key: string
  readonly lines: ReadonlyArray<string>
}

interface Family {
  readonly name: string
  type: string
  help: string | undefined
  readonly series: Array<Series>
}

const sample = (name: string, labels: Labels, value: number | bigint) => `${name}${renderLabels(labels)} ${formatValue(value)}`

const seriesOf = (name: string, labels: Labels, state: MetricState.MetricState.Untyped): { type: string; lines: Array<string> } | undefined => {
  if (MetricState.isCounterState(state)) return { type: "counter", lines: [sample(name, labels, state.count)] }
  if (MetricState.isGaugeState(state)) {
    if (typeof state.value === "number" && Number.isNaN(state.value)) return undefined
    return { type: "gauge", lines: [sample(name, labels, state.value)] }
  }
  if (MetricState.isHistogramState(state)) {
    const lines: Array<string> = []
    let sawInf = false
    for (const [bound, cumulative] of state.buckets) {
      if (bound === Number.POSITIVE_INFINITY) sawInf = true
      lines.push(sample(`${name}_bucket`, [...labels, ["le", formatValue(bound)]], cumulative))
    }
    if (!sawInf) lines.push(sample(`${name}_bucket`, [...labels, ["le", "+Inf"]], state.count))
    lines.push(sample(`${name}_sum`, labels, state.sum), sample(`${name}_count`, labels, state.count))
    return { type: "histogram", lines }
  }
  if (MetricState.isSummaryState(state)) {
    const lines: Array<string> = []
    for (const [quantile, value] of state.quantiles) {
      lines.push(sample(name, [...labels, ["quantile", formatValue(quantile)]], Option.getOrElse(value, () => Number.NaN)))
    }
    lines.push(sample(`${name}_sum`, labels, state.sum), sample(`${name}_count`, labels, state.count))
    return { type: "summary", lines }
  }
  if (MetricState.isFrequencyState(state)) {
    const lines = [...state.occurrences].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([key, count]) => sample(name, [...labels, ["key", key]], count))
    return { type: "counter", lines }
  }
  return undefined
}

/** The exposition of a registry snapshot. */
export const renderPrometheus = (pairs: ReadonlyArray<MetricPair.MetricPair.Untyped>): string => {
  const families = new Map<string, Family>()
  for (const pair of pairs) {
    const name = metricName(pair.metricKey.name)
    const labels: Labels = pair.metricKey.tags.map((t) => [labelName(t.key), t.value] as const).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    const rendered = seriesOf(name, labels, pair.metricState)
    if (rendered === undefined) continue
    let family = families.get(name)
    if (family === undefined) {
      family = { name, type: rendered.type, help: undefined, series: [] }
      families.set(name, family)
    }
    if (family.help === undefined) family.help = Option.getOrUndefined(pair.metricKey.description)
    family.series.push({ key: renderLabels(labels), lines: rendered.lines })
  }
  const out: Array<string> = []
  for (const family of [...families.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    out.push(`# HELP ${family.name} ${escapeHelp(family.help ?? family.name)}`)
    out.push(`# TYPE ${family.name} ${family.type}`)
    family.series.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
    for (const s of family.series) for (const line of s.lines) out.push(line)
  }
  return out.length === 0 ? "" : `${out.join("\n")}\n`
}

const scrapeHooks: Array<(nowMillis: number) => void> = []
const scrapeReads = new Set<Effect.Effect<void>>()

/**
 * Runs `read` before every scrape, before the hooks (it sets what they turn into gauges), until the
 * returned function is called (its layer closed). It must not fail; each scrape waits for it.
 */
export const onScrapeRead = (read: Effect.Effect<void>): () => void => {
  // a distinct entry per registration, so one layer's removal leaves another's
  const entry = Effect.suspend(() => read)
  scrapeReads.add(entry)
  return () => {
    scrapeReads.delete(entry)
  }
}

/** Runs before every scrape, with the Clock's time: gauges computed from time are set here. */
export const onScrape = (hook: (nowMillis: number) => void): void => {
  scrapeHooks.push(hook)
}

/** The exposition of the Effect metrics of this process that `keep` keeps (all by default), as of now. */
export const scrapePrometheusWhere = (keep: (pair: MetricPair.MetricPair.Untyped) => boolean = () => true): Effect.Effect<string> =>
  Effect.gen(function*() {
    if (scrapeReads.size > 0) yield* Effect.all([...scrapeReads], { concurrency: "unbounded", discard: true })
    const now = yield* Clock.currentTimeMillis
    for (const hook of scrapeHooks) hook(now)
    return renderPrometheus((yield* Metric.snapshot).filter(keep))
  })

/** The exposition of every Effect metric of this process, as of now. */
export const scrapePrometheus: Effect.Effect<string> = scrapePrometheusWhere()
