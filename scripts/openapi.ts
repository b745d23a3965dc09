/**
 * The OpenAPI documents of attest's servers (src/cli/apiDocuments.ts) in docs/openapi/<name>.json.
 *
 *   npm run openapi            write them
 *   npm run openapi -- --check fail (exit 1) when a committed file is not what the code generates
 *   … --dir <path>             another directory than docs/openapi (tests)
 *
 * CI runs the check (.ci/run), so the committed documents are always the ones the servers serve.
 */
import { readFileSync, writeFileSync, existsSync, mkdirSync } from "node:fs"
import { dirname, join, relative } from "node:path"
import { fileURLToPath } from "node:url"
import { apiDocuments } from "../src/cli/apiDocuments.js"

const root = join(dirname(fileURLToPath(import.meta.url)), "..")
const dirArg = process.argv.indexOf("--dir")
const dir = dirArg > 0 && process.argv[dirArg + 1] !== undefined ? process.argv[dirArg + 1]! : join(root, "docs", "openapi")
const check = process.argv.includes("--check")

const stale: Array<string> = []
for (const { name, document } of apiDocuments) {
  const file = join(dir, `${name}.json`)
  const text = `${JSON.stringify(document(), null, 2)}\n`
  const current = existsSync(file) ? readFileSync(file, "utf8") : undefined
  if (current === text) continue
  if (check) {
    stale.push(relative(root, file))
  } else {
    mkdirSync(dir, { recursive: true })
    writeFileSync(file, text)
    console.log(`wrote ${relative(root, file)}`)
  }
}
if (stale.length > 0) {
  console.error(`OpenAPI documents not current: ${stale.join(", ")}; run 'npm run openapi' and commit the result`)
  process.exit(1)
}
if (check) console.log(`OpenAPI documents current: ${apiDocuments.map((d) => relative(root, join(dir, `${d.name}.json`))).join(", ")}`)
