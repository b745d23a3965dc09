// Bundles the executable (dist/cli/attest.js, scripts/bundle.mjs, with the check page) when any
// source file is newer than the last bundle, so `npm start` works on a fresh clone and stays quick on the second run.
// The executable needs only the bundle; `npm run build` also writes tsc's dist/src for library users.
import { execFileSync } from "node:child_process"
import { existsSync, readdirSync, statSync } from "node:fs"
import { join } from "node:path"

const stamp = "dist/cli/attest.js"
const newest = (dir) => {
  let t = 0
  if (!existsSync(dir)) return t
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name)
    t = Math.max(t, e.isDirectory() ? newest(p) : statSync(p).mtimeMs)
  }
  return t
}
const sources = Math.max(
  newest("src"),
  newest("schemas"),
  statSync("package.json").mtimeMs,
  statSync("scripts/bundle.mjs").mtimeMs,
  statSync("scripts/checkPage.mjs").mtimeMs
)
if (!existsSync(stamp) || !existsSync("dist/attest-check.html") || statSync(stamp).mtimeMs < sources) {
  console.error("attest: bundling with esbuild …")
  execFileSync(process.execPath, ["scripts/bundle.mjs"], { stdio: "inherit" })
}
