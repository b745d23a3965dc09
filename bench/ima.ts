/**
 * IMA engine throughput. (a) full evaluation of 100,000 ima-ng entries (template-hash recomputation,
 * PCR 10 replay in the sha256 bank, policy lookups) from one list string; (b) 1,000 new entries on top
 * of the incremental state after 100,000; (c) 1,000,000 entries in 100,000-entry rounds (generated
 * lazily, evaluated incrementally) to show growth. Baseline in the same run: a loop doing only the two
 * SHA-256 calls per entry a replay needs (template data, extend).
 */
import * as crypto from "node:crypto"
import { performance } from "node:perf_hooks"
import { Either } from "effect"
import { decodeRuntimePolicy } from "../schemas/RuntimePolicy.js"
import { compilePolicy } from "../src/ima/policy.js"
import { verifyIma } from "../src/ima/verify.js"
import { generate, policyFor } from "./_imaGen.js"

const N = 100_000
// The machine is shared: CPU time of this process (user + system) is the one-core cost; wall time is printed beside it.
const cpuMs = () => {
  const u = process.cpuUsage()
  return (u.user + u.system) / 1000
}
const wallNote = (cpu: number, wall: number) => (wall > cpu * 1.3 ? ` (wall ${fmt(wall / 1000)} s: other load on the machine)` : "")
const fmt = (x: number, d = 3) => x.toFixed(d)
const median = (xs: Array<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

const compile = (n: number) => Either.getOrThrow(compilePolicy(Either.getOrThrow(decodeRuntimePolicy(policyFor(n, "sha256")))))

console.log(`node ${process.version}; generating ${N} ima-ng entries (sha256 template-hash column)…`)
let t = performance.now()
const gen = generate(0, N, "sha256")
const genMore = generate(N, N + 1000, "sha256", gen.pcrs)
const policy = compile(N + 1000)
console.log(`generated in ${fmt((performance.now() - t) / 1000, 2)} s; list ${(gen.text.length / 1e6).toFixed(1)} MB as one string`)

// Baseline: only the hashes a replay needs, template data pre-encoded.
const datas: Array<Buffer> = gen.text.split("\n").filter((l) => l !== "").map((l) => {
  const parts = l.split(" ")
  const d = Buffer.concat([Buffer.from("sha256:\0"), Buffer.from(parts[3]!.slice(7), "hex")])
  const name = Buffer.from(parts[4]!)
  const b = Buffer.alloc(8 + d.length + name.length + 1)
  b.writeUInt32LE(d.length, 0)
  d.copy(b, 4)
  b.writeUInt32LE(name.length + 1, 4 + d.length)
  name.copy(b, 8 + d.length)
  return b
})
const hashLoop = (h: (data: Buffer) => Buffer): number => {
  const t0 = cpuMs()
  let pcr: Buffer = Buffer.alloc(32)
  const ext = Buffer.alloc(64)
  for (const d of datas) {
    const th = h(d)
    pcr.copy(ext, 0)
    th.copy(ext, 32)
    pcr = h(ext)
  }
  if (!pcr.equals(gen.pcrs.sha256)) throw new Error("baseline replay mismatch")
  return (cpuMs() - t0) / 1000
}
const oneShot = (d: Buffer) => crypto.hash("sha256", d, "buffer")
const viaCreateHash = (d: Buffer) => crypto.createHash("sha256").update(d).digest()
const baseOneShot: Array<number> = []
const baseCreate: Array<number> = []
for (let i = 0; i < 5; i++) {
  baseOneShot.push(hashLoop(oneShot))
  baseCreate.push(hashLoop(viaCreateHash))
}
const baseline = Math.min(median(baseOneShot), median(baseCreate))
console.log(`baseline hash loop (2×SHA-256/entry, CPU): crypto.hash ${fmt(median(baseOneShot))} s, createHash ${fmt(median(baseCreate))} s`)

// (a) full evaluation
const quoted = { sha256: gen.pcrs.sha256 }
const fullRuns: Array<number> = []
let stateAfter100k = undefined as ReturnType<typeof verifyIma>["state"] | undefined
const fullWall: Array<number> = []
for (let i = 0; i < 5; i++) {
  const w0 = performance.now()
  const t0 = cpuMs()
  const r = verifyIma({ list: gen.text, startEntry: 0, policy, quotedPcr10: quoted })
  fullRuns.push((cpuMs() - t0) / 1000)
  fullWall.push(performance.now() - w0)
  if (r.failures.length !== 0 || r.matchedEntries !== N) throw new Error(`unexpected result: ${JSON.stringify(r.failures.slice(0, 2))}`)
  stateAfter100k = r.state
}
const full = median(fullRuns)
console.log(`(a) full evaluation of ${N}: ${fmt(full)} s CPU (runs ${fullRuns.map((x) => fmt(x)).join(", ")})${wallNote(full * 1000, median(fullWall))}, ${Math.round(N / full)} entries/s`)
console.log(`    hash-loop ratio (baseline / full): ${fmt(baseline / full, 2)}`)

// (b) incremental: 1,000 new entries on the state after 100,000
const incRuns: Array<number> = []
for (let i = 0; i < 20; i++) {
  const t0 = cpuMs()
  const r = verifyIma({ list: genMore.text, startEntry: N, state: stateAfter100k, policy, quotedPcr10: { sha256: genMore.pcrs.sha256 } })
  incRuns.push(cpuMs() - t0)
  if (r.failures.length !== 0 || r.state.nextEntry !== N + 1000) throw new Error("incremental round failed")
}
const inc = median(incRuns)
console.log(`(b) 1,000 new entries on an incremental state of ${N}: ${fmt(inc, 2)} ms (median of 20)`)

// (c) 1,000,000 entries: ten 100k rounds, generated lazily, evaluated incrementally (same work as one list).
const M = 1_000_000
const policyM = compile(M)
let state = undefined as ReturnType<typeof verifyIma>["state"] | undefined
let pcrs = undefined as { sha1: Buffer; sha256: Buffer } | undefined
let evalTime = 0
const perRound: Array<number> = []
for (let from = 0; from < M; from += N) {
  const g = generate(from, from + N, "sha256", pcrs)
  pcrs = g.pcrs
  const t0 = cpuMs()
  const r = verifyIma({ list: g.text, startEntry: from, state, policy: policyM, quotedPcr10: { sha256: g.pcrs.sha256 } })
  const dt = (cpuMs() - t0) / 1000
  evalTime += dt
  perRound.push(dt)
  if (r.failures.length !== 0) throw new Error(`round at ${from} failed: ${JSON.stringify(r.failures.slice(0, 2))}`)
  state = r.state
}
console.log(`(c) ${M} entries: ${fmt(evalTime)} s evaluation (rounds ${perRound.map((x) => fmt(x, 2)).join(" ")}); ` +
  `${fmt(evalTime / full, 2)}× the 100k time for 10× the entries`)

console.log(`BENCH ima_full_100k_s ${fmt(full)} s`)
console.log(`BENCH ima_incremental_1k_ms ${fmt(inc, 2)} ms`)
console.log(`BENCH ima_full_1m_s ${fmt(evalTime)} s`)
console.log(`BENCH ima_entries_per_s ${Math.round(N / full)}`)
console.log(`BENCH ima_hash_loop_ratio ${fmt(baseline / full, 2)}`)
