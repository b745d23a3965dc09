/**
 * Start-up of the built `attest` executable (dist/cli/attest.js, bundled first when missing or
 * stale): `attest --version` and `attest policy --help` against `node -e 0`, the floor no Node
 * program starts under, measured in the same run. Median of 10 wall-clock runs each, taken in
 * interleaved rounds so a change in machine load touches all three alike.
 *
 *   npm run bench -- cli-startup                 the bundle
 *   npm run bench -- cli-startup --bin <file>    another build of the executable, for comparison
 */
import { execFileSync, spawnSync } from "node:child_process"
import { performance } from "node:perf_hooks"

const RUNS = 10
const binAt = process.argv.indexOf("--bin")
const bin = binAt > 0 ? process.argv[binAt + 1]! : "dist/cli/attest.js"
if (binAt < 0) execFileSync(process.execPath, ["scripts/build-if-needed.mjs"], { stdio: "inherit" })

interface Case {
  readonly name: string
  readonly args: ReadonlyArray<string>
  /** What the output must contain: a run that prints something else measures nothing. */
  readonly expect: RegExp
  readonly times: Array<number>
}

const cases: ReadonlyArray<Case> = [
  { name: "node -e 0", args: ["-e", "0"], expect: /^$/, times: [] },
  { name: "attest --version", args: [bin, "--version"], expect: /^\d+\.\d+\.\d+/, times: [] },
  { name: "attest policy --help", args: [bin, "policy", "--help"], expect: /check-boot/, times: [] }
]

for (let round = 0; round < RUNS; round++) {
  for (const c of cases) {
    const t0 = performance.now()
    const r = spawnSync(process.execPath, c.args, { encoding: "utf8" })
    const ms = performance.now() - t0
    if (r.status !== 0 || !c.expect.test(r.stdout)) {
      throw new Error(`${c.name} failed (status ${r.status}): ${r.stderr || r.stdout}`)
    }
    c.times.push(ms)
  }
}

const median = (xs: ReadonlyArray<number>) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length % 2 === 1 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2
}
const [floor, version, help] = cases.map((c) => median(c.times)) as [number, number, number]
const row = (c: Case, m: number) =>
  `${c.name.padEnd(22)} median ${m.toFixed(0).padStart(5)} ms   min ${Math.min(...c.times).toFixed(0).padStart(5)} ms   max ${Math.max(...c.times).toFixed(0).padStart(5)} ms   ${(m / floor).toFixed(1).padStart(5)} x floor`
console.log(`${bin}, ${RUNS} runs each`)
for (const [i, c] of cases.entries()) console.log(row(c, [floor, version, help][i]!))
console.log(`BENCH node_floor_ms ${floor.toFixed(0)} ms`)
console.log(`BENCH cli_version_ms ${version.toFixed(0)} ms`)
console.log(`BENCH cli_help_ms ${help.toFixed(0)} ms`)
console.log(`BENCH cli_version_vs_floor_ratio ${(version / floor).toFixed(2)}`)
console.log(`BENCH cli_help_vs_floor_ratio ${(help / floor).toFixed(2)}`)
