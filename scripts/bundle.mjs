// Bundles the `attest` executable with esbuild into dist/cli/: attest.js (the entry: command tree,
// Effect core, @effect/cli) and chunks that hold each subcommand's implementation, loaded only when
// that subcommand runs (the `lazy(() => import("./x.run.js"))` handlers of src/cli/). Start-up reads
// the entry and its shared chunks instead of hundreds of modules through barrel indexes.
//
// Left outside the bundle and loaded from node_modules at run time: packages with native code
// (better-sqlite3 under @effect/sql-sqlite-node, msgpackr-extract, …: their .node files are found
// relative to their own package) and optional peers that are not installed (pg-native), whose
// absence the requiring package handles itself.
import { build } from "esbuild"
import { execFileSync } from "node:child_process"
import { chmodSync, cpSync, existsSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { buildCheckPage } from "./checkPage.mjs"
import { isBuiltin } from "node:module"
import { dirname, join } from "node:path"

const NATIVE_LOADERS = ["node-gyp-build", "bindings", "prebuild-install", "node-addon-api"]

const packageName = (specifier) => specifier.split("/").slice(0, specifier.startsWith("@") ? 2 : 1).join("/")

/** The directory of `name` as Node would find it from `from`, or undefined when it is not installed. */
const packageDir = (name, from) => {
  for (let dir = from; ; dir = dirname(dir)) {
    const candidate = join(dir, "node_modules", name)
    if (existsSync(join(candidate, "package.json"))) return candidate
    if (dirname(dir) === dir) return undefined
  }
}

const isNative = (dir) => {
  const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"))
  const deps = Object.keys(pkg.dependencies ?? {})
  return pkg.gypfile === true || existsSync(join(dir, "binding.gyp")) || deps.some((d) => NATIVE_LOADERS.includes(d))
}

/** Leaves native and not-installed packages as imports resolved by Node at run time. */
const external = new Set()
const nativeOrMissing = {
  name: "native-or-missing",
  setup(b) {
    b.onResolve({ filter: /^[^./]/ }, (args) => {
      const name = packageName(args.path)
      if (args.path.startsWith("node:") || isBuiltin(name)) return undefined
      const dir = packageDir(name, args.resolveDir)
      if (dir !== undefined && !isNative(dir)) return undefined
      external.add(dir === undefined ? `${name} (not installed)` : name)
      return { path: args.path, external: true }
    })
  }
}

const outdir = "dist/cli"
const result = await build({
  // statelessWorker: the verifier's verify/* worker threads, found beside the chunk that starts
  // them (src/verifier/stateless/pool.ts)
  entryPoints: { attest: "src/cli/bin.ts", "command-tree": "src/cli/commandTreeDump.ts", statelessWorker: "src/verifier/stateless/statelessWorker.ts" },
  outdir,
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node20",
  minify: true,
  sourcemap: "linked",
  legalComments: "linked",
  plugins: [nativeOrMissing],
  // CommonJS packages inside an ESM bundle call require() for node built-ins: give them one.
  banner: { js: `import { createRequire as __attestCreateRequire } from "node:module"; const require = __attestCreateRequire(import.meta.url);` },
  metafile: true,
  logLevel: "warning"
})
writeFileSync(join(outdir, "meta.json"), JSON.stringify(result.metafile))
// the dashboard's page (HTML, CSS, JS modules) beside the chunks, where src/dashboard/assets.ts looks
rmSync(join(outdir, "dashboard"), { recursive: true, force: true })
cpSync("src/dashboard/static", join(outdir, "dashboard"), { recursive: true })
// the check-it-yourself page's code for browsers (/assets/check.js), and the page alone, offline
const check = await buildCheckPage(join(outdir, "dashboard"), "dist/attest-check.html")
chmodSync(join(outdir, "attest.js"), 0o755)
// the command tree for --help and --version without loading Effect (src/cli/fast.ts)
writeFileSync(join(outdir, "commands.json"), execFileSync(process.execPath, [join(outdir, "command-tree.js")]))
console.error(`attest: bundled ${join(outdir, "attest.js")} (left to node_modules: ${[...external].sort().join(", ")}); check page ${Math.round(check.bytes / 1024)} kB, offline as dist/attest-check.html`)
