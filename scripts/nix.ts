/**
 * The NixOS module's generated parts and the plain systemd files (scripts/nix/files.ts).
 *
 *   npm run nix             write them
 *   npm run nix -- --check  fail (exit 1) when a committed file is not what the code generates
 *   … --dir <path>          write or check under another directory than the repository (tests)
 *
 * CI runs the check (.ci/run), so the module's options are always the program's.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { generatedFiles } from "./nix/files.js"

const root = join(dirname(fileURLToPath(import.meta.url)), "..")
const dirArg = process.argv.indexOf("--dir")
const dir = dirArg > 0 && process.argv[dirArg + 1] !== undefined ? process.argv[dirArg + 1]! : root
const check = process.argv.includes("--check")

const stale: Array<string> = []
for (const [path, text] of generatedFiles()) {
  const file = join(dir, path)
  const current = existsSync(file) ? readFileSync(file, "utf8") : undefined
  if (current === text) continue
  if (check) {
    stale.push(path)
  } else {
    mkdirSync(dirname(file), { recursive: true })
    writeFileSync(file, text)
    console.log(`wrote ${path}`)
  }
}
if (stale.length > 0) {
  console.error(`generated Nix and packaging files not current: ${stale.join(", ")}; run 'npm run nix' and commit the result`)
  process.exit(1)
}
if (check) console.log(`generated Nix and packaging files current: ${generatedFiles().map(([p]) => p).join(", ")}`)
