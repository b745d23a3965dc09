/** Once before the suite: the bundle tests spawn (test/support/attestBin.ts), rebuilt when a source is newer. */
import { execFileSync } from "node:child_process"
import { resolve } from "node:path"

export const setup = () => {
  execFileSync(process.execPath, ["scripts/build-if-needed.mjs"], { cwd: resolve(__dirname, "../.."), stdio: "inherit" })
}
