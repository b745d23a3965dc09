/** A process's CPU from /proc (Linux, clock ticks of 10 ms): total, kernel, and by thread. */
import { readdirSync, readFileSync } from "node:fs"

const CLOCK_TICKS_PER_S = 100
const fieldsOf = (stat: string) => stat.slice(stat.lastIndexOf(")") + 2).split(" ")
const ms = (ticks: string | undefined) => (Number(ticks) * 1000) / CLOCK_TICKS_PER_S

/** User + system CPU ms of `pid`. */
export const cpuMs = (pid: number): number => {
  const f = fieldsOf(readFileSync(`/proc/${pid}/stat`, "utf8"))
  return ms(f[11]) + ms(f[12])
}
/** User + system CPU ms of `pid`'s live threads in nanoseconds' resolution (/proc/<pid>/task/<tid>/schedstat): an idle process's few ms per second, which clock ticks cannot tell apart. */
export const preciseCpuMs = (pid: number): number => {
  let ns = 0
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ")[0])
    } catch {
      // the thread ended
    }
  }
  return ns / 1e6
}
/** Kernel (system) CPU ms of `pid`: syscalls, TLS sockets, SQLite's writes and syncs. */
export const sysMs = (pid: number): number => ms(fieldsOf(readFileSync(`/proc/${pid}/stat`, "utf8"))[12])
/** CPU ms of each thread of `pid` by name ("main" for the main thread): where the CPU goes (V8's GC and compiler threads are "node"). */
export const threadCpuMs = (pid: number): Map<string, number> => {
  const out = new Map<string, number>()
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8")
      const key = tid === String(pid) ? "main" : stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"))
      const f = fieldsOf(stat)
      out.set(key, (out.get(key) ?? 0) + ms(f[11]) + ms(f[12]))
    } catch {
      // the thread ended
    }
  }
  return out
}
/** The per-thread CPU between two readings, per `n` (e.g. attestations), largest first. */
export const threadSplit = (before: Map<string, number>, after: Map<string, number>, n: number): string =>
  [...after].map(([k, v]) => [k, (v - (before.get(k) ?? 0)) / Math.max(1, n)] as const).filter(([, v]) => v > 0).sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${v.toFixed(2)}`).join(", ")
