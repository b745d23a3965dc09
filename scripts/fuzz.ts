/**
 * npm run fuzz -- <target> [--minutes N]   run one fuzz target with random seeds for N minutes (1)
 * npm run fuzz -- --list                   the targets (test/fuzz/targets.ts)
 * npm run fuzz -- --all [--minutes N]      every target in turn, N minutes each
 *
 * The target's test (test/fuzz/*.fuzz.test.ts) runs under vitest with ATTEST_FUZZ_TARGET set: it
 * replays its corpus, then checks batches of fresh inputs until the time is up and writes each failing
 * input to test/fuzz/corpus/<target>/<hash>.json, which every `npm test` then replays. Exit code 1
 * when something was found.
 */
import { spawnSync } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { FUZZ_TARGETS, type FuzzTargetName } from "../test/fuzz/targets.js"

const args = process.argv.slice(2)
const flag = (name: string) => {
  const i = args.indexOf(name)
  return i < 0 ? undefined : args[i + 1]
}
const names = Object.keys(FUZZ_TARGETS) as Array<FuzzTargetName>

if (args.includes("--list") || args.length === 0) {
  const width = Math.max(...names.map((n) => n.length))
  for (const n of names) console.log(`${n.padEnd(width)}  ${FUZZ_TARGETS[n].about}`)
  if (args.length === 0) console.log("\nusage: npm run fuzz -- <target> [--minutes N] | --all [--minutes N] | --list")
  process.exit(0)
}

const minutes = Number(flag("--minutes") ?? "1")
if (!(minutes > 0)) {
  console.error(`--minutes must be a positive number, got ${flag("--minutes")}`)
  process.exit(2)
}
const chosen = args.includes("--all") ? names : args.filter((a, i) => !a.startsWith("--") && args[i - 1] !== "--minutes")
const unknown = chosen.filter((n) => !(n in FUZZ_TARGETS))
if (unknown.length > 0 || chosen.length === 0) {
  console.error(`unknown fuzz target ${unknown.join(", ") || "(none given)"}; npm run fuzz -- --list names them`)
  process.exit(2)
}

interface Report {
  readonly tried: number
  readonly batches: number
  readonly seconds: number
  readonly findings: ReadonlyArray<{ readonly file: string; readonly seed: number; readonly error: string }>
}

const dir = mkdtempSync(join(tmpdir(), "attest-fuzz-"))
let found = 0
for (const name of chosen as Array<FuzzTargetName>) {
  const reportFile = join(dir, `${name}.json`)
  console.log(`fuzz ${name}: ${minutes} min with random seeds …`)
  const run = spawnSync("npx", ["vitest", "run", FUZZ_TARGETS[name].file, "--reporter=dot"], {
    stdio: ["ignore", "inherit", "inherit"],
    env: { ...process.env, ATTEST_FUZZ_TARGET: name, ATTEST_FUZZ_MINUTES: String(minutes), ATTEST_FUZZ_REPORT: reportFile }
  })
  let report: Report | undefined
  try {
    report = JSON.parse(readFileSync(reportFile, "utf8")) as Report
  } catch {
    report = undefined
  }
  if (report === undefined) {
    console.log(`FUZZ ${name}: no report (vitest exited ${run.status}; a corpus input failing again stops the run before it starts)`)
    found++
    continue
  }
  console.log(`FUZZ ${name}: ${report.tried} inputs in ${report.seconds} s (${report.batches} seeds), ${report.findings.length} failing`)
  for (const f of report.findings) console.log(`  ${f.file} (seed ${f.seed})\n    ${f.error.split("\n")[0]}`)
  found += report.findings.length
}
rmSync(dir, { recursive: true, force: true })
process.exit(found > 0 ? 1 : 0)
