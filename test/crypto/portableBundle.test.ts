/**
 * The portable entry points (every package export without a `node`-only condition, and the check
 * page's code) bundle for a browser: esbuild with platform browser fails on any import of a Node
 * built-in, and no source file they reach uses node's globals (`Buffer`, `process`) outside the two
 * places that look for them on purpose (src/crypto/encoding.ts picks Buffer's codecs when there is
 * one; src/crypto/node.ts asks `process.getBuiltinModule` for node:crypto).
 */
import { describe, expect, it } from "@effect/vitest"
import { build, type Metafile } from "esbuild"
import { readFileSync } from "node:fs"
import { isBuiltin } from "node:module"
import { join, resolve } from "node:path"

const root = resolve(__dirname, "../..")
const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { exports: Record<string, string | Record<string, string>> }

/** Package exports a browser can resolve (a `default` condition), as their TypeScript sources. */
const portableEntries = Object.entries(pkg.exports)
  .filter((e): e is [string, Record<string, string>] => typeof e[1] === "object" && e[1]["default"] !== undefined)
  .map(([name, conditions]) => ({ name: `attest${name.slice(1)}`, source: conditions["default"]!.replace(/^\.\/dist\//, "").replace(/\.js$/, ".ts") }))

const NODE_GLOBALS_ALLOWED = new Set(["src/crypto/encoding.ts", "src/crypto/node.ts"])

/** Bundles `entry` for a browser; the Node built-ins it imports (each with its importer) and the metafile. */
const bundle = async (entry: string) => {
  const builtins: Array<string> = []
  const r = await build({
    entryPoints: [join(root, entry)],
    absWorkingDir: root,
    bundle: true,
    write: false,
    platform: "browser",
    format: "esm",
    metafile: true,
    logLevel: "silent",
    plugins: [{
      name: "record-node-builtins",
      setup(b) {
        b.onResolve({ filter: /.*/ }, (args) => {
          if (!args.path.startsWith("node:") && !isBuiltin(args.path)) return undefined
          builtins.push(`${args.path} (imported by ${args.importer.replace(`${root}/`, "")})`)
          return { path: args.path, external: true }
        })
      }
    }]
  })
  return { builtins, metafile: r.metafile as Metafile }
}

/** Source files of the project in the bundle that use `Buffer` or `process` as globals. */
const nodeGlobalsIn = (metafile: Metafile): ReadonlyArray<string> =>
  Object.keys(metafile.inputs)
    .filter((f) => !f.includes("node_modules") && /\.ts$/.test(f) && !NODE_GLOBALS_ALLOWED.has(f))
    .flatMap((f) => {
      // comments out, then any use of the identifiers as values (types after `:` or `as` are allowed)
      const code = readFileSync(join(root, f), "utf8").replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:])\/\/.*$/gm, "$1")
      return [...code.matchAll(/(?<![\w.$])(Buffer|process)(?=\s*[.([])/g)].map((m) => `${f}: ${m[1]}`)
    })

describe("the portable entry points bundle for a browser", () => {
  it("lists the portable exports: crypto, tpm, ima, boot, evaluate, ear, tee (verifier, tpm/node and testing are node-only)", () => {
    expect(portableEntries.map((e) => e.name)).toEqual(["attest/crypto", "attest/tpm", "attest/ima", "attest/boot", "attest/evaluate", "attest/ear", "attest/tee"])
    expect(Object.keys(pkg.exports).filter((k) => typeof pkg.exports[k] === "object" && (pkg.exports[k] as Record<string, string>)["default"] === undefined)).toEqual(["./tpm/node", "./verifier", "./testing"])
  })

  for (const entry of [...portableEntries, { name: "the check page", source: "src/dashboard/check/page.ts" }]) {
    it(`${entry.name} (${entry.source}) imports no Node built-in and uses no node global`, async () => {
      const { builtins, metafile } = await bundle(entry.source)
      expect({ entry: entry.name, builtins }).toEqual({ entry: entry.name, builtins: [] })
      expect({ entry: entry.name, globals: nodeGlobalsIn(metafile) }).toEqual({ entry: entry.name, globals: [] })
    }, 120_000)
  }

  it("would catch one: the Node-only entries import Node built-ins and use Buffer", async () => {
    for (const source of ["src/tpm/node.ts", "src/verifier/index.ts"]) {
      const { builtins, metafile } = await bundle(source)
      expect([builtins.length > 0, nodeGlobalsIn(metafile).length > 0]).toEqual([true, true])
    }
  }, 120_000)
})
