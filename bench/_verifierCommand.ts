/**
 * How a benchmark starts `attest verifier`: the bundled executable (dist/cli/attest.js, rebuilt
 * when a source is newer), which is what `npm start` and the `attest` bin run. Run through tsx
 * instead, every function the verifier creates pays esbuild's keepNames wrapper, and a measured
 * verifier then costs ~25% more CPU than the one users run.
 */
import { execFileSync } from "node:child_process"

let built = false

/** The node arguments that run `attest <args>` from the current bundle. */
export const attestCommand = (args: ReadonlyArray<string>): ReadonlyArray<string> => {
  if (!built) {
    execFileSync(process.execPath, ["scripts/build-if-needed.mjs"], { stdio: "inherit" })
    built = true
  }
  return ["dist/cli/attest.js", ...args]
}
