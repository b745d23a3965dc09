/**
 * How a benchmark starts `attest <command>`: the bundled executable (dist/cli/attest.js, rebuilt
 * when a source is newer), which is what `npm start` and the `attest` bin run. Run through tsx
 * instead, every function the process creates pays esbuild's keepNames wrapper, and a measured
 * verifier then costs ~25% more CPU than the one users run. BENCH_TSX=1 runs the source through
 * tsx anyway: a CPU profile (BENCH_PROF_DIR) then names every function; the bundle's profile is
 * read through its source maps (bench/_profileSummary.ts), which give files and lines but not
 * always the function's name. BENCH_ATTEST=<path of another build's attest.js> runs that build
 * instead (a copy of dist/ from before a change: before and after back to back).
 */
import { execFileSync } from "node:child_process"

let built = false

/** The node arguments that run `attest <args>`. */
export const attestCommand = (args: ReadonlyArray<string>): ReadonlyArray<string> => {
  if (process.env["BENCH_TSX"] === "1") return ["--import", "tsx", "src/cli/bin.ts", ...args]
  // another build (the one before a change, copied aside): compared back to back on one machine
  const other = process.env["BENCH_ATTEST"]
  if (other !== undefined && other !== "") return [other, ...args]
  if (!built) {
    execFileSync(process.execPath, ["scripts/build-if-needed.mjs"], { stdio: "inherit" })
    built = true
  }
  return ["dist/cli/attest.js", ...args]
}
