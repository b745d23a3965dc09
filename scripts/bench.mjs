// `npm run bench -- <name> [args]` runs bench/<name>.ts with tsx; without a name it lists them.
// --expose-gc: benchmarks that report retained heap collect garbage before they read it.
import { spawnSync } from "node:child_process"
import { existsSync, readdirSync } from "node:fs"

const [name, ...rest] = process.argv.slice(2)
const available = readdirSync("bench").filter((f) => f.endsWith(".ts") && !f.startsWith("_")).map((f) => f.slice(0, -3))
if (!name || !existsSync(`bench/${name}.ts`)) {
  console.error(name ? `no benchmark named '${name}'` : "usage: npm run bench -- <name>")
  console.error(`benchmarks: ${available.join(", ")}`)
  process.exit(name ? 2 : 0)
}
const r = spawnSync(process.execPath, ["--expose-gc", "--import", "tsx", `bench/${name}.ts`, ...rest], { stdio: "inherit" })
process.exit(r.status ?? 1)
