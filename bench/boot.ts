/**
 * Measured-boot engine throughput on the real UEFI logs of the vectors: parse + replay of PCRs
 * 0–9/14 in every bank + boot aggregates + the PCR comparison + `example` policy evaluation, per
 * log. Baseline in the same run: a naive loop that only extends each event's digests into PCRs
 * with node:crypto (digests pre-extracted, so it does the hashing and nothing else).
 */
import { createHash } from "node:crypto"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { performance } from "node:perf_hooks"
import { Either } from "effect"
import { createRefState } from "../src/boot/createRefState.js"
import { evaluateMeasuredBoot, type MbInput } from "../src/boot/evaluate.js"
import { parseEventLog, parseEventLogBase64 } from "../src/boot/eventLog.js"
import { EV } from "../src/boot/eventTypes.js"
import { examplePolicy } from "../src/boot/examplePolicy.js"
import { replayPcrs } from "../src/boot/replay.js"

const V = join(import.meta.dirname, "../../shared/vectors")
const bin = (...p: Array<string>) => new Uint8Array(readFileSync(join(V, ...p)))
const mb = "keylime/test/data/create-mb-policy"
const logs: Array<{ name: string; log: Uint8Array | string }> = [
  { name: "gce (3 banks)", log: bin("tpm/eventlog/event-gce-ubuntu-2104-log.bin") },
  { name: "keylime plain", log: bin(mb, "binary_bios_measurements") },
  { name: "keylime secureboot", log: bin(mb, "binary_bios_measurements-secureboot") },
  { name: "mb_log.b64 (base64)", log: readFileSync(join(V, "keylime/test/data/mb_log.b64"), "utf8") },
  { name: "rust-keylime uefi_log", log: bin("rust-keylime/keylime/test-data/uefi_log.bin") }
]

const parse = (l: Uint8Array | string) => Either.getOrThrow(typeof l === "string" ? parseEventLogBase64(l) : parseEventLog(l))
const secureRef = Either.getOrThrow(createRefState(parse(logs[2]!.log))).refstate
const inputs: Array<MbInput & { name: string; log: Uint8Array | string; passes: boolean }> = logs.map(({ name, log }) => {
  const parsed = parse(log)
  const own = createRefState(parsed, { withoutSecureBoot: true })
  const refstate = Either.isRight(own) ? own.right.refstate : secureRef
  const input = { log, quotedPcrs: replayPcrs(parsed), refstate }
  return { ...input, name, passes: evaluateMeasuredBoot(input, examplePolicy).failures.length === 0 }
})

// Baseline material: the digests each log extends, per bank.
const extendsOf = inputs.map((i) =>
  parse(i.log).events.flatMap((e) => (e.type === EV.NO_ACTION ? [] : e.digests.flatMap((d) => (d.alg ? [{ pcr: e.pcr, alg: d.alg, digest: d.digest }] : []))))
)
const baseline = (k: number) => {
  const pcrs = new Map<string, Buffer>()
  for (const x of extendsOf[k]!) {
    const key = `${x.alg}:${x.pcr}`
    const prev = pcrs.get(key) ?? Buffer.alloc(x.digest.length)
    pcrs.set(key, createHash(x.alg).update(prev).update(x.digest).digest())
  }
  return pcrs.size
}

const timeLoop = (seconds: number, f: (k: number) => unknown): number => {
  let n = 0
  const end = performance.now() + seconds * 1000
  while (performance.now() < end) for (let k = 0; k < inputs.length; k++, n++) f(k)
  return n
}
const rate = (seconds: number, f: (k: number) => unknown) => {
  timeLoop(0.3, f) // warm-up
  const t = performance.now()
  const n = timeLoop(seconds, f)
  return n / ((performance.now() - t) / 1000)
}

console.log(`node ${process.version}; ${inputs.length} real logs, rotated:`)
for (const [k, i] of inputs.entries()) {
  console.log(`  ${i.name.padEnd(24)} ${parse(i.log).events.length} events, ${extendsOf[k]!.length} extends, example policy ${i.passes ? "passes" : "fails (Keylime semantics)"}`)
}
const results: Array<{ full: number; base: number }> = []
for (let round = 0; round < 3; round++) {
  const full = rate(2, (k) => evaluateMeasuredBoot(inputs[k]!, examplePolicy))
  const base = rate(2, baseline)
  results.push({ full, base })
  console.log(`round ${round + 1}: full ${full.toFixed(0)} logs/s, hash-only baseline ${base.toFixed(0)} logs/s, ratio ${(full / base).toFixed(3)}`)
}
const med = (xs: Array<number>) => [...xs].sort((a, b) => a - b)[1]!
const full = med(results.map((r) => r.full))
const base = med(results.map((r) => r.base))
console.log(`median: parse+replay+aggregates+PCR check+example policy ${full.toFixed(0)} logs/s (${(1000 / full).toFixed(3)} ms/log); baseline ${base.toFixed(0)} logs/s; full/baseline ${(full / base).toFixed(3)}`)
console.log(`BENCH boot_logs_per_s ${full.toFixed(0)} logs/s`)
console.log(`BENCH boot_hash_baseline_logs_per_s ${base.toFixed(0)} logs/s`)
console.log(`BENCH boot_hash_loop_ratio ${(full / base).toFixed(3)}`)
