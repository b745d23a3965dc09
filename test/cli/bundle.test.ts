/**
 * The built executable (dist/cli/attest.js, bundled here when missing or older than the sources):
 * it answers as the source does, and its start-up graph holds the command tree only; each
 * subcommand's implementation stays in a chunk loaded when that subcommand runs.
 */
import { beforeAll, describe, expect, it } from "@effect/vitest"
import { spawn } from "node:child_process"
import { readFileSync } from "node:fs"
import { join, resolve } from "node:path"
import { commandTree } from "../../src/cli/commandTree.js"
import { rootCommand } from "../../src/cli/Root.js"

const root = resolve(__dirname, "../..")
const bundle = join(root, "dist/cli/attest.js")

const node = (...args: Array<string>) =>
  new Promise<{ code: number | null; out: string; err: string }>((done, reject) => {
    const child = spawn(process.execPath, args, { cwd: root })
    let out = ""
    let err = ""
    child.stdout.on("data", (d: Buffer) => (out += d.toString()))
    child.stderr.on("data", (d: Buffer) => (err += d.toString()))
    child.once("error", reject)
    child.once("close", (code) => done({ code, out, err }))
  })

interface Meta {
  readonly outputs: Record<string, {
    readonly imports: ReadonlyArray<{ readonly path: string; readonly kind: string; readonly external?: boolean }>
    readonly inputs: Record<string, unknown>
    /** The module a chunk was made for (the entry, or the target of an `import()`). */
    readonly entryPoint?: string
  }>
}

/**
 * The source files of the bundle's start-up: what the entry imports statically and, with
 * `commandTree`, what it loads to run a command (main.ts, Root's awaited declarations), but no
 * `.run` module.
 */
const startupInputs = (o: { readonly commandTree: boolean }): ReadonlyArray<string> => {
  const meta = JSON.parse(readFileSync(join(root, "dist/cli/meta.json"), "utf8")) as Meta
  const entry = Object.keys(meta.outputs).find((k) => k.endsWith("dist/cli/attest.js"))!
  const seen = new Set<string>()
  const visit = (file: string) => {
    if (seen.has(file)) return
    seen.add(file)
    for (const i of meta.outputs[file]!.imports) {
      if (i.external) continue
      if (i.kind === "import-statement") visit(i.path)
      else if (o.commandTree && i.kind === "dynamic-import" && !(meta.outputs[i.path]!.entryPoint ?? "").endsWith(".run.ts")) visit(i.path)
    }
  }
  visit(entry)
  return [...seen].flatMap((f) => Object.keys(meta.outputs[f]!.inputs))
}

describe("attest bundle", () => {
  beforeAll(async () => {
    const r = await node("scripts/build-if-needed.mjs")
    if (r.code !== 0) throw new Error(`bundling failed: ${r.err}`)
  }, 300_000)

  it("answers --version with the package version", async () => {
    const r = await node(bundle, "--version")
    expect(r.err).toBe("")
    expect(r.out.trim()).toBe(JSON.parse(readFileSync(join(root, "package.json"), "utf8")).version)
  })

  it("answers policy --help with every policy subcommand", async () => {
    const r = await node(bundle, "policy", "--help")
    expect(r.code).toBe(0)
    for (const c of ["create runtime", "create measured-boot", "sign", "verify", "check", "check-boot"]) expect(r.out).toContain(c)
  })

  it("answers --version and --help from the prebuilt command tree without loading Effect; the tree is the one the sources declare", async () => {
    // what the entry imports statically: bin.ts and fast.ts, nothing from node_modules
    expect(startupInputs({ commandTree: false }).filter((f) => f.includes("node_modules/"))).toEqual([])
    const built = JSON.parse(readFileSync(join(root, "dist/cli/commands.json"), "utf8")) as unknown
    expect(built).toEqual(JSON.parse(JSON.stringify(commandTree(rootCommand))))
    const typo = await node(bundle, "tenant", "lst")
    expect([typo.code, typo.err.split(";")[0]]).toEqual([2, "attest tenant: unknown command 'lst' (did you mean list?)"])
  })

  it("loads no subcommand implementation and none of its heavy packages at start-up", () => {
    // everything the entry imports statically, main.ts and the command declarations Root awaits
    const inputs = startupInputs({ commandTree: true })
    expect(inputs.filter((f) => f.endsWith(".run.ts"))).toEqual([])
    for (const heavy of ["node_modules/pkijs/", "node_modules/undici/", "node_modules/@effect/sql", "src/tpm/Tpm.ts", "src/registrar/"]) {
      expect(inputs.filter((f) => f.includes(heavy))).toEqual([])
    }
    // and the command tree did reach the declarations
    expect(inputs.some((f) => f.endsWith("src/cli/policy/check.ts"))).toBe(true)
  })
})
