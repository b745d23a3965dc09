// Builds dist/ with tsc when any source file is newer than the last build, so `npm start`
// works on a fresh clone and stays quick on the second run.
import { execFileSync } from "node:child_process"
import { existsSync, readdirSync, statSync } from "node:fs"
import { join } from "node:path"

const stamp = "dist/src/cli/bin.js"
const newest = (dir) => {
  let t = 0
  if (!existsSync(dir)) return t
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name)
    t = Math.max(t, e.isDirectory() ? newest(p) : statSync(p).mtimeMs)
  }
  return t
}
const sources = Math.max(newest("src"), newest("schemas"), newest("layers"), statSync("package.json").mtimeMs)
if (!existsSync(stamp) || statSync(stamp).mtimeMs < sources) {
  console.error("attest: building with tsc …")
  execFileSync(process.execPath, ["node_modules/typescript/bin/tsc", "-p", "tsconfig.build.json"], { stdio: "inherit" })
}
