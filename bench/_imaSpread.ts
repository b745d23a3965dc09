/**
 * Where a slow IMA call's time went, for bench/ima.ts. Process CPU (getrusage) counts every thread,
 * so one call can pay for V8's concurrent marking, sweeping or compiling on its worker threads; a
 * collection's pause on the main thread shows as a perf_hooks `gc` entry inside the call's window;
 * and the machine (a busy sibling hyperthread, other tenants) slows the call's own instructions,
 * which the hash-only replay run beside each call shows too. Each call records all three, so the
 * tail of a series can be told apart.
 */
import { closeSync, openSync, readdirSync, readSync } from "node:fs"
import { PerformanceObserver } from "node:perf_hooks"

/** Every collection's main-thread pause (perf_hooks `gc` entries, performance.now() time line). */
const pauses: Array<{ readonly start: number; readonly ms: number; readonly major: boolean }> = []
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    // NODE_PERFORMANCE_GC_MAJOR = 4 (mark-compact); minor (scavenge) = 1, incremental = 8, weak = 16
    pauses.push({ start: e.startTime, ms: e.duration, major: (e as unknown as { detail?: { kind?: number } }).detail?.kind === 4 })
  }
}).observe({ entryTypes: ["gc"] })

/** The observer delivers entries asynchronously: wait a little before reading a window. */
export const pausesIn = async (from: number, to: number) => {
  await new Promise((r) => setTimeout(r, 20))
  return pauses.filter((g) => g.start + g.ms >= from && g.start <= to)
}

export const pauseText = (xs: ReadonlyArray<{ readonly ms: number; readonly major: boolean }>): string => {
  const major = xs.filter((g) => g.major).length
  return `${xs.length - major} minor + ${major} major collections, ${xs.reduce((a, g) => a + g.ms, 0).toFixed(1)} ms paused`
}

/**
 * CPU ms of this process's threads other than the main one, in nanoseconds' resolution
 * (/proc/self/task/<tid>/schedstat; a thread's figure is exact once it has slept, which V8's
 * workers do between jobs). Call `refresh` before a series: threads start lazily.
 */
export class OtherThreads {
  private fds: Array<number> = []
  private readonly buf = Buffer.alloc(64)

  refresh(): void {
    for (const fd of this.fds) closeSync(fd)
    this.fds = []
    try {
      for (const tid of readdirSync("/proc/self/task")) {
        if (tid !== String(process.pid)) this.fds.push(openSync(`/proc/self/task/${tid}/schedstat`, "r"))
      }
    } catch {
      // not Linux: the column reads 0
    }
  }

  ms(): number {
    let ns = 0
    for (const fd of this.fds) {
      try {
        const n = readSync(fd, this.buf, 0, this.buf.length, 0)
        let v = 0
        for (let i = 0; i < n && this.buf[i] !== 32; i++) v = v * 10 + this.buf[i]! - 48
        ns += v
      } catch {
        // the thread ended
      }
    }
    return ns / 1e6
  }
}

export interface Call {
  /** Process CPU ms (every thread). */
  readonly cpu: number
  /** CPU ms of the other threads inside the call's window. */
  readonly others: number
  readonly wall: number
  /** performance.now() window, to match collections against. */
  readonly from: number
  readonly to: number
  /** The hash-only replay of the same entries right after the call (CPU ms). */
  readonly replay: number
}

const sorted = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)
export const pct = (xs: ReadonlyArray<number>, p: number): number => sorted(xs)[Math.min(xs.length - 1, Math.floor(xs.length * p))] ?? Number.NaN

/**
 * The spread of a series: p50/p95 of process CPU and of the main thread's share (process less the
 * other threads), then the slowest 5 % of calls: how many held a collection's pause, how many
 * paid ≥ 0.1 ms of other threads' CPU, and their replay beside them against the series' median
 * replay (≥ 1.5×: the machine was slow for both).
 */
export const spreadText = async (calls: ReadonlyArray<Call>): Promise<{ readonly text: string; readonly main50: number; readonly main95: number }> => {
  const gcs = await pausesIn(calls[0]?.from ?? 0, calls.at(-1)?.to ?? 0)
  const paused = (c: Call) => gcs.some((g) => g.start <= c.to && g.start + g.ms >= c.from)
  const main = calls.map((c) => c.cpu - c.others)
  const cut = pct(calls.map((c) => c.cpu), 0.95)
  const tail = calls.filter((c) => c.cpu >= cut)
  const replay50 = pct(calls.map((c) => c.replay), 0.5)
  const clean = calls.filter((c) => !paused(c) && c.others < 0.1)
  const f = (x: number) => x.toFixed(3)
  const text = [
    `main thread p50 ${f(pct(main, 0.5))}, p95 ${f(pct(main, 0.95))} ms; other threads p50 ${f(pct(calls.map((c) => c.others), 0.5))}, p95 ${f(pct(calls.map((c) => c.others), 0.95))} ms; ${pauseText(gcs)}`,
    `calls with neither a pause nor ≥ 0.1 ms on other threads: ${clean.length} of ${calls.length}, p50 ${f(pct(clean.map((c) => c.cpu), 0.5))}, p95 ${f(pct(clean.map((c) => c.cpu), 0.95))} ms`,
    `slowest 5 % (${tail.length} calls ≥ ${f(cut)} ms): ${tail.filter(paused).length} held a collection's pause, ${tail.filter((c) => c.others >= 0.1).length} paid ≥ 0.1 ms on other threads, ${tail.filter((c) => c.replay >= 1.5 * replay50).length} had their replay ≥ 1.5× its median (the machine)`
  ].join("\n    ")
  return { text, main50: pct(main, 0.5), main95: pct(main, 0.95) }
}
