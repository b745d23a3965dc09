/**
 * One phase of bench/soak.ts: checks every agent's schedule in the database every `checkEveryMs`,
 * and every minute prints a sample of the verifier (RSS and descriptors from /proc, heap from its
 * /metrics, CPU from /proc), of its database (size, attestations recorded) and of the load
 * generators' CPU. The phase's figures compare its end with its baseline (minute 1, so the first
 * minute's JIT and caches settle; minute 0 when the phase is one minute long).
 */
import { appendFileSync } from "node:fs"
import { loadavg } from "node:os"
import { Effect } from "effect"
import type { DashboardClientStats } from "./_soakDashboard.js"
import { cpuMs, preciseCpuMs } from "./_procCpu.js"
import { type AgentTimes, type DbProbe, missedAt, openFds, rssKb, scrapeSeries } from "./_soakProbe.js"

export interface PhaseOptions {
  readonly name: string
  readonly minutes: number
  readonly verifierPid: number
  readonly metricsUrl: string
  readonly db: DbProbe
  readonly limitMs: number
  readonly checkEveryMs: number
  /** The load generators' processes (their CPU is printed: what limits a run on a small machine). */
  readonly loadPids: ReadonlyArray<number>
  /** Agents the run enrolled: one absent from the database misses every check. */
  readonly expectedAgents: number
  readonly dashboard?: { readonly pid: number; readonly stats: DashboardClientStats }
  /** A file to append one JSON line per check to (--trace): where in a minute its misses fell, and what the processes and the database did meanwhile. */
  readonly traceFile?: string | undefined
}

interface Sample {
  readonly at: number
  readonly rssKb: number
  readonly heapBytes: number | undefined
  /** The least heap_used of the minute's scrapes (one every HEAP_EVERY checks): the live heap after a GC, which a leak lifts. */
  readonly heapFloorBytes: number | undefined
  readonly heapTotalBytes: number | undefined
  /** The verifier's own count, beside /proc's (it scrapes before /proc is read: they may differ by the scrape's connection). */
  readonly metricsFds: number | undefined
  readonly fds: number
  readonly dbBytes: number
  readonly attestations: number
  readonly cpuMs: number
  readonly loadCpuMs: number
  readonly selfCpuMs: number
}

export interface PhaseResult {
  /** Checks at which an agent missed its schedule, summed over agents. */
  readonly missed: number
  readonly rssGrowthRatio: number
  /** Of the heap's floor (the least heap_used of a minute's scrapes), end / baseline. */
  readonly heapGrowthRatio: number | undefined
  readonly fdGrowth: number
  readonly dbBytesPerAttestation: number
  readonly attestationsPerS: number
  /** Over the phase, % of one core: the verifier, the load generators (both fleets), this process (the checks). */
  readonly verifierCpuPct: number
  readonly loadCpuPct: number
  readonly selfCpuPct: number
}

const MB = 1024 * 1024
const HEAP_EVERY = 5
const pct = (ms: number, overMs: number) => `${((ms / overMs) * 100).toFixed(0)}%`

export const runPhase = (o: PhaseOptions) =>
  Effect.gen(function*() {
    let heapFloor: number | undefined
    const heapUsed = (gauges: Map<string, number>) => {
      const used = gauges.get(`attest_process_memory_bytes{kind="heap_used"}`)
      if (used !== undefined) heapFloor = Math.min(heapFloor ?? used, used)
      return used
    }
    const scrape = () => scrapeSeries(o.metricsUrl).catch(() => new Map<string, number>())
    const sample = Effect.promise(async (): Promise<Sample> => {
      const gauges = await scrape()
      const heapBytes = heapUsed(gauges)
      const floor = heapFloor
      heapFloor = undefined
      const rows = await o.db.attestations()
      return {
        at: performance.now(),
        rssKb: rssKb(o.verifierPid),
        heapBytes,
        heapFloorBytes: floor,
        heapTotalBytes: gauges.get(`attest_process_memory_bytes{kind="heap_total"}`),
        metricsFds: gauges.get("attest_process_open_fds"),
        fds: openFds(o.verifierPid),
        dbBytes: await o.db.sizeBytes(),
        attestations: rows.pull + rows.push,
        cpuMs: cpuMs(o.verifierPid),
        loadCpuMs: o.loadPids.reduce((t, pid) => t + cpuMs(pid), 0),
        selfCpuMs: cpuMs(process.pid)
      }
    })
    const print = (minute: number, s: Sample, previous: Sample | undefined, late: string) => {
      const over = previous === undefined ? 0 : s.at - previous.at
      const made = previous === undefined ? 0 : s.attestations - previous.attestations
      const files = o.db.fileBytes()
      console.log(
        `${o.name} minute ${minute}: verifier RSS ${(s.rssKb / 1024).toFixed(1)} MB, heap ${s.heapBytes === undefined ? "n/a" : `${(s.heapBytes / MB).toFixed(1)} of ${((s.heapTotalBytes ?? 0) / MB).toFixed(1)} MB (floor ${((s.heapFloorBytes ?? 0) / MB).toFixed(1)})`}, ${s.fds} fds (its /metrics: ${s.metricsFds ?? "n/a"}); ` +
          `database ${(s.dbBytes / MB).toFixed(2)} MB${files === undefined ? "" : ` (files ${(files / MB).toFixed(2)} MB)`}; ` +
          (previous === undefined ? "" : `${made} attestations (${((made / over) * 1000).toFixed(0)}/s), ${late}; verifier CPU ${pct(s.cpuMs - previous.cpuMs, over)} of a core, load generators ${pct(s.loadCpuMs - previous.loadCpuMs, over)}, this process ${pct(s.selfCpuMs - previous.selfCpuMs, over)}; `) +
          (o.dashboard === undefined ? "" : `dashboard RSS ${(rssKb(o.dashboard.pid) / 1024).toFixed(0)} MB, ${o.dashboard.stats.requests} requests; `) +
          `load average ${loadavg()[0]!.toFixed(1)}`
      )
    }

    const start = performance.now()
    const samples: Array<Sample> = [yield* sample]
    print(0, samples[0]!, undefined, "")
    let missed = 0
    // this minute's misses: pull and push agents late, agents not attesting at all, the oldest verdict seen
    let inMinute = { pull: 0, push: 0, inactive: 0, absent: 0, worstAgeMs: 0 }
    let checks = 0
    const lateAgents = new Set<string>()
    let nextCheck = start + o.checkEveryMs
    const trace = o.traceFile === undefined ? undefined : traceWriter(o)
    for (let minute = 1; minute <= o.minutes; minute++) {
      const minuteEnd = start + minute * 60_000
      while (nextCheck <= minuteEnd) {
        yield* Effect.sleep(Math.max(0, nextCheck - performance.now()))
        const agents = yield* Effect.promise(() => o.db.agents())
        const now = Date.now()
        const late = missedAt(agents, now, o.limitMs)
        const absent = Math.max(0, o.expectedAgents - agents.length)
        missed += late.length + absent
        inMinute.absent += absent
        for (const a of late) {
          lateAgents.add(a.agentId)
          if (!a.active) inMinute.inactive++
          else inMinute[a.model]++
        }
        for (const a of agents) if (a.active && a.lastSuccessMs > 0) inMinute.worstAgeMs = Math.max(inMinute.worstAgeMs, now - (a.lastSuccessMs + a.resolutionMs))
        if (trace !== undefined) yield* Effect.promise(() => trace(now, agents, late, absent))
        nextCheck += o.checkEveryMs
        if (++checks % HEAP_EVERY === 0) heapUsed(yield* Effect.promise(scrape))
      }
      yield* Effect.sleep(Math.max(0, minuteEnd - performance.now()))
      const s = yield* sample
      const m = inMinute
      const examples = [...lateAgents].slice(0, 2).join(", ")
      print(minute, s, samples[samples.length - 1], `missed ${m.pull + m.push + m.inactive + m.absent} (pull ${m.pull}, push ${m.push} late, ${m.inactive} not attesting, ${m.absent} not enrolled; oldest verdict ${(m.worstAgeMs / 1000).toFixed(1)} s${lateAgents.size === 0 ? "" : `; ${lateAgents.size} agents so far, e.g. ${examples}`})`)
      samples.push(s)
      inMinute = { pull: 0, push: 0, inactive: 0, absent: 0, worstAgeMs: 0 }
    }

    // minute 1 once there is a later minute to compare it with; a one-minute phase compares with its start
    const base = samples[samples.length > 2 ? 1 : 0]!
    const first = samples[0]!
    const end = samples[samples.length - 1]!
    const middle = samples[Math.floor((samples.length - 1) / 2)]!
    const peakRss = Math.max(...samples.slice(1).map((s) => s.rssKb))
    const made = end.attestations - first.attestations
    const result: PhaseResult = {
      missed,
      rssGrowthRatio: end.rssKb / base.rssKb,
      heapGrowthRatio: end.heapFloorBytes === undefined || base.heapFloorBytes === undefined ? undefined : end.heapFloorBytes / base.heapFloorBytes,
      fdGrowth: end.fds - base.fds,
      dbBytesPerAttestation: (end.dbBytes - first.dbBytes) / Math.max(1, made),
      attestationsPerS: (made / (end.at - first.at)) * 1000,
      verifierCpuPct: ((end.cpuMs - first.cpuMs) / (end.at - first.at)) * 100,
      loadCpuPct: ((end.loadCpuMs - first.loadCpuMs) / (end.at - first.at)) * 100,
      selfCpuPct: ((end.selfCpuMs - first.selfCpuMs) / (end.at - first.at)) * 100
    }
    console.log(
      `${o.name}: ${made} attestations in ${o.minutes} min; ${missed} missed schedules (${lateAgents.size} agents); RSS ${(base.rssKb / 1024).toFixed(1)} MB at minute ${samples.indexOf(base)} → ${(end.rssKb / 1024).toFixed(1)} MB at the end ` +
        `(peak ${(peakRss / 1024).toFixed(1)} MB, ${(peakRss / base.rssKb).toFixed(3)}x); fds ${base.fds} → ${end.fds}; database ${(first.dbBytes / MB).toFixed(2)} → ${(end.dbBytes / MB).toFixed(2)} MB, ` +
        `${(((end.dbBytes - middle.dbBytes) / Math.max(1, end.attestations - middle.attestations))).toFixed(0)} bytes per attestation over the second half (push attestations beyond push_attestations_kept are deleted); ` +
        `verifier CPU ${result.verifierCpuPct.toFixed(0)}% of a core (${((end.cpuMs - first.cpuMs) / Math.max(1, made)).toFixed(2)} ms per attestation), load generators ${result.loadCpuPct.toFixed(0)}%, this process ${result.selfCpuPct.toFixed(0)}%; load average ${loadavg().map((l) => l.toFixed(1)).join(" ")}`
    )
    return result
  })

/**
 * One line per check: the late agents by model and the oldest verdict, then over the interval since
 * the last check the CPU of the verifier (ns resolution), the load generators and the dashboard, the
 * database's files, how long a /metrics scrape took (the verifier's event loop, seen from outside),
 * the verifier's counters that moved, and the dashboard client's slowest request.
 */
const traceWriter = (o: PhaseOptions) => {
  const cpu = () => ({ verifier: preciseCpuMs(o.verifierPid), load: o.loadPids.reduce((t, pid) => t + cpuMs(pid), 0), dashboard: o.dashboard === undefined ? 0 : cpuMs(o.dashboard.pid) })
  let last = { at: performance.now(), cpu: cpu(), series: new Map<string, number>() }
  return async (now: number, agents: ReadonlyArray<AgentTimes>, late: ReadonlyArray<AgentTimes>, absent: number) => {
    const t0 = performance.now()
    const series = await scrapeSeries(o.metricsUrl).catch(() => new Map<string, number>())
    const scrapeMs = performance.now() - t0
    const at = performance.now()
    const c = cpu()
    const over = at - last.at
    const moved: Record<string, number> = {}
    for (const [k, v] of series) {
      // per-agent series and histogram buckets would bury the rest
      if (k.includes("_bucket") || k.includes("agent_id=")) continue
      const before = last.series.get(k)
      if (before !== undefined && v !== before) moved[k] = Number((v - before).toFixed(3))
    }
    let oldestS = 0
    for (const a of agents) if (a.active && a.lastSuccessMs > 0) oldestS = Math.max(oldestS, (now - a.lastSuccessMs - a.resolutionMs) / 1000)
    const line = {
      phase: o.name,
      at: new Date(now).toISOString(),
      latePull: late.filter((a) => a.active && a.model === "pull").length,
      latePush: late.filter((a) => a.active && a.model === "push").length,
      inactive: late.filter((a) => !a.active).length,
      absent,
      oldestS: Number(oldestS.toFixed(2)),
      verifierCpuPct: Number((((c.verifier - last.cpu.verifier) / over) * 100).toFixed(1)),
      loadCpuPct: Number((((c.load - last.cpu.load) / over) * 100).toFixed(1)),
      dashboardCpuPct: Number((((c.dashboard - last.cpu.dashboard) / over) * 100).toFixed(1)),
      dbFileBytes: o.db.fileBytes(),
      scrapeMs: Number(scrapeMs.toFixed(1)),
      dashboardSlowestMs: o.dashboard?.stats.slowestMs,
      load1: Number(loadavg()[0]!.toFixed(2)),
      moved
    }
    if (o.dashboard !== undefined) o.dashboard.stats.slowestMs = 0
    last = { at, cpu: c, series }
    appendFileSync(o.traceFile!, JSON.stringify(line) + "\n")
  }
}
