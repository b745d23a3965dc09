/**
 * src/ops/prometheus.ts: the exposition of Effect metrics in the text format 0.0.4, read back by a
 * strict parser: HELP and TYPE per family, escaped label values and help texts, cumulative
 * histogram buckets ending in +Inf with _sum and _count, retired (NaN) gauges left out; reads
 * registered with onScrapeRead run at each scrape, until removed.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Metric, MetricBoundaries } from "effect"
import { escapeLabelValue, formatValue, onScrapeRead, renderPrometheus, scrapePrometheus } from "../../src/ops/prometheus.js"
import { parseExposition, valueOf } from "../support/prometheus.js"

const only = (prefix: string, text: string) =>
  text.split("\n").filter((l) => l.includes(prefix)).join("\n") + "\n"

describe("Prometheus exposition", () => {
  it.effect("writes counters and gauges with HELP, TYPE and escaped labels, parseable back", () =>
    Effect.gen(function*() {
      const c = Metric.counter("t_prom_requests_total", { description: "Requests \\ with a\nnewline", incremental: true })
      yield* Metric.incrementBy(Metric.tagged(c, "path", "a \"quoted\" \\ value\nnext"), 3)
      yield* Metric.increment(Metric.tagged(c, "path", "plain"))
      yield* Metric.set(Metric.gauge("t_prom_depth", { description: "Depth" }).pipe(Metric.tagged("queue", "q1")), 7.5)
      const text = only("t_prom_", renderPrometheus(yield* Metric.snapshot))
      expect(text).toContain("# HELP t_prom_requests_total Requests \\\\ with a\\nnewline\n# TYPE t_prom_requests_total counter\n")
      expect(text).toContain(`t_prom_requests_total{path="a \\"quoted\\" \\\\ value\\nnext"} 3\n`)
      const parsed = parseExposition(text)
      expect(parsed.get("t_prom_requests_total")?.help).toBe("Requests \\ with a\nnewline")
      expect(valueOf(parsed, "t_prom_requests_total", { path: "a \"quoted\" \\ value\nnext" })).toBe(3)
      expect(valueOf(parsed, "t_prom_requests_total", { path: "plain" })).toBe(1)
      expect(parsed.get("t_prom_depth")?.type).toBe("gauge")
      expect(valueOf(parsed, "t_prom_depth", { queue: "q1" })).toBe(7.5)
    }))

  it.effect("writes histograms as cumulative buckets with le, +Inf, _sum and _count", () =>
    Effect.gen(function*() {
      const h = Metric.histogram("t_prom_seconds", MetricBoundaries.fromIterable([0.1, 1, 10]), "Durations").pipe(Metric.tagged("check", "quote"))
      for (const v of [0.05, 0.5, 0.7, 5, 50]) yield* Metric.update(h, v)
      const parsed = parseExposition(only("t_prom_seconds", renderPrometheus(yield* Metric.snapshot)))
      const family = parsed.get("t_prom_seconds")!
      expect(family.type).toBe("histogram")
      expect(family.samples.filter((s) => s.name === "t_prom_seconds_bucket").map((s) => [s.labels["le"], s.value])).toEqual([
        ["0.1", 1],
        ["1", 3],
        ["10", 4],
        ["+Inf", 5]
      ])
      expect(valueOf(parsed, "t_prom_seconds_sum", { check: "quote" })).toBeCloseTo(56.25)
      expect(valueOf(parsed, "t_prom_seconds_count", { check: "quote" })).toBe(5)
    }))

  it.effect("leaves out a gauge set to NaN (a retired series)", () =>
    Effect.gen(function*() {
      const g = Metric.gauge("t_prom_age", { description: "Age" })
      yield* Metric.set(g.pipe(Metric.tagged("agent_id", "gone")), Number.NaN)
      yield* Metric.set(g.pipe(Metric.tagged("agent_id", "here")), 4)
      const parsed = parseExposition(only("t_prom_age", renderPrometheus(yield* Metric.snapshot)))
      expect(parsed.get("t_prom_age")!.samples.map((s) => s.labels["agent_id"])).toEqual(["here"])
    }))

  it("formats special values and escapes as the format says", () => {
    expect([formatValue(Number.POSITIVE_INFINITY), formatValue(Number.NEGATIVE_INFINITY), formatValue(Number.NaN), formatValue(2n ** 70n), formatValue(0.25)])
      .toEqual(["+Inf", "-Inf", "NaN", "1180591620717411303424", "0.25"])
    expect(escapeLabelValue("a\\b\"c\nd")).toBe("a\\\\b\\\"c\\nd")
  })

  it.effect("a whole scrape of this process parses (every family has HELP and TYPE once)", () =>
    Effect.gen(function*() {
      const text = yield* scrapePrometheus
      expect(() => parseExposition(text)).not.toThrow()
    }))

  it.effect("runs a registered read at each scrape (its value in that scrape), and no more once removed", () =>
    Effect.gen(function*() {
      const gauge = Metric.gauge("t_prom_read_at_scrape", { description: "Read at scrape" })
      let reads = 0
      const remove = onScrapeRead(Effect.suspend(() => Metric.set(gauge, ++reads)))
      const first = valueOf(parseExposition(only("t_prom_read_", yield* scrapePrometheus)), "t_prom_read_at_scrape")
      const second = valueOf(parseExposition(only("t_prom_read_", yield* scrapePrometheus)), "t_prom_read_at_scrape")
      remove()
      const third = valueOf(parseExposition(only("t_prom_read_", yield* scrapePrometheus)), "t_prom_read_at_scrape")
      expect({ first, second, third, reads }).toEqual({ first: 1, second: 2, third: 2, reads: 2 })
    }))
})
