/**
 * The NixOS module cannot drift from the configuration: nix/options.generated.nix is what
 * `npm run nix` writes from src/config/sections.ts (the CI check), and evaluated by Nix itself it
 * declares every option of every section with the program's type, default and description; those
 * defaults, written as TOML, load in the program unchanged. The units the module makes
 * (nix/units.generated.nix) carry the same directives as packaging/systemd. Every Nix file parses.
 *
 * nixpkgs cannot be fetched here, so the option file is evaluated against a stand-in `lib` whose
 * types evaluate to plain descriptions; nix/test.nix (a NixOS VM test) evaluates the real module.
 */
import { describe, expect, it } from "@effect/vitest"
import { spawnSync } from "node:child_process"
import { cpSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { Either } from "effect"
import { stringify } from "smol-toml"
import { resolveSection, sectionDefaults } from "../../src/config/load.js"
import type { OptionSpec, OptionType, SectionSpec } from "../../src/config/option.js"
import { type SectionName, sectionNames, sections } from "../../src/config/sections.js"
import { parseToml } from "../../src/config/toml.js"
import { generatedFiles } from "../../scripts/nix/files.js"
import { CONFIG_FILE, EXECUTABLE } from "../../scripts/nix/packaging.js"
import { units } from "../../scripts/nix/units.js"
import { requireOrSkip } from "../support/requirements.js"
import { parseUnit } from "./unitFile.js"

const root = resolve(__dirname, "../..")

const run = (command: string, args: ReadonlyArray<string>, cwd = root) => {
  const r = spawnSync(command, args, { cwd, encoding: "utf8" })
  return { code: r.status, out: r.stdout ?? "", err: r.stderr ?? "", error: r.error }
}

const nixAvailable = run("nix-instantiate", ["--version"]).code === 0
const hasNix = requireOrSkip("nix-instantiate", nixAvailable, "apt-get install -y nix-bin")

/** Debian's nix.conf names a nixbld group that need not exist; evaluation builds nothing. */
const noBuildUsers = ["--option", "build-users-group", ""]

/** `nix-instantiate --eval --strict --json` of an expression. */
const nixEval = (expr: string): unknown => {
  const r = run("nix-instantiate", [...noBuildUsers, "--eval", "--strict", "--json", "-E", expr])
  if (r.code !== 0) throw new Error(`nix-instantiate failed (${r.code}): ${r.err}`)
  return JSON.parse(r.out)
}

/** A stand-in for nixpkgs' lib: mkOption returns its attributes, each type a plain description. */
const stubLib = `{
  mkOption = o: o;
  types = {
    str = "str"; bool = "bool"; int = "int"; port = "port";
    ints = { unsigned = "unsigned"; positive = "positive"; between = lo: hi: { between = [ lo hi ]; }; };
    numbers = { nonnegative = "nonnegative"; };
    enum = values: { enum = values; };
    either = a: b: { either = [ a b ]; };
    listOf = t: { listOf = t; };
    addCheck = t: check: { addCheck = t; inherit check; };
  };
}`

/** Values each range check of the generated file is applied to, by Nix. */
const probes = [-1, 0, 1, 1023, 1024, 65535, 65536]

/** What the stand-in `lib` makes of the Nix type an option must have. */
const expectedType = (t: OptionType): unknown => {
  switch (t.kind) {
    case "string":
      return "str"
    case "boolean":
      return "bool"
    case "seconds":
      return t.orWord === undefined ? "nonnegative" : { either: [{ enum: [t.orWord] }, "nonnegative"] }
    case "literal":
      return { enum: t.values }
    case "list":
      return { listOf: t.values === undefined ? "str" : { enum: t.values } }
    case "integer":
      if (t.min === 0 && t.max === 65535) return "port"
      if (t.min !== undefined && t.max !== undefined) return { between: [t.min, t.max] }
      if (t.min === 0) return "unsigned"
      if (t.min === 1) return "positive"
      if (t.min !== undefined) return { addCheck: "int", description: `integer at least ${t.min}`, accepts: probes.map((p) => p >= t.min!) }
      if (t.max !== undefined) return { addCheck: "int", description: `integer at most ${t.max}`, accepts: probes.map((p) => p <= t.max!) }
      return "int"
  }
}

type NixOptions = Record<string, Record<string, { type: unknown; default: unknown; description: string }>>

/** The options file under the stand-in lib; a range check is replaced by its verdicts on the probes. */
const evalOptions = (dir = root): NixOptions =>
  nixEval(`
    let
      options = import ${join(dir, "nix/options.generated.nix")} { lib = ${stubLib}; };
      verdicts = t: if builtins.isAttrs t && t ? check then removeAttrs t [ "check" ] // { accepts = map t.check [ ${probes.map((p) => (p < 0 ? `(${p})` : String(p))).join(" ")} ]; } else t;
    in builtins.mapAttrs (_: builtins.mapAttrs (_: o: o // { type = verdicts o.type; })) options
  `) as NixOptions

const runScript = (...args: Array<string>) => run(process.execPath, ["--import", "tsx", "scripts/nix.ts", ...args])

describe("the NixOS module's generated files", () => {
  it("are committed as `npm run nix` writes them, and the check fails naming a stale one", () => {
    const ok = runScript("--check")
    expect({ code: ok.code, err: ok.err }).toEqual({ code: 0, err: "" })
    for (const [path, text] of generatedFiles()) expect({ path, current: readFileSync(join(root, path), "utf8") === text }).toEqual({ path, current: true })

    // a copy whose options file lacks one option (as if sections.ts had gained it): named, exit 1
    const dir = mkdtempSync(join(tmpdir(), "attest-nix-"))
    for (const [path] of generatedFiles()) cpSync(join(root, path), join(dir, path), { recursive: true })
    const file = join(dir, "nix/options.generated.nix")
    writeFileSync(file, readFileSync(file, "utf8").replace(/\n    webhook_url = lib\.mkOption \{[^}]*\};/, ""))
    const stale = runScript("--check", "--dir", dir)
    expect(stale.code).toBe(1)
    expect(stale.err).toContain("nix/options.generated.nix")
    expect(stale.err).toContain("run 'npm run nix'")
  })
})

describe.skipIf(!hasNix)("the NixOS module, as Nix evaluates it", () => {
  it("declares every option of every section with the program's type, default and description", () => {
    const nix = evalOptions()
    expect(Object.keys(nix).sort()).toEqual([...sectionNames].sort())
    for (const name of sectionNames) {
      const spec = sections[name] as SectionSpec
      expect({ section: name, options: Object.keys(nix[name]!).sort() }).toEqual({ section: name, options: Object.keys(spec).sort() })
      for (const [option, o] of Object.entries(spec) as Array<[string, OptionSpec<unknown>]>) {
        expect({ option: `${name}.${option}`, ...nix[name]![option] }).toEqual({
          option: `${name}.${option}`,
          type: expectedType(o.type),
          default: o.default,
          description: o.doc
        })
      }
    }
  })

  it("has defaults that, written as the module's TOML file, load in the program as its own defaults", () => {
    const nix = evalOptions()
    for (const name of sectionNames) {
      const defaults = Object.fromEntries(Object.entries(nix[name]!).map(([k, o]) => [k, o.default]))
      // the module writes `{ <section> = settings; }` with pkgs.formats.toml; smol-toml stands in
      const text = stringify({ [name]: defaults })
      const doc = Either.getOrThrow(parseToml(text))
      const resolved = resolveSection(name as SectionName, { env: {}, file: { path: "module.toml", doc, text } })
      expect(Either.isRight(resolved) ? "loads" : resolved.left.message).toBe("loads")
      if (Either.isLeft(resolved)) continue
      expect(resolved.right.values).toEqual(sectionDefaults(sections[name] as SectionSpec))
      expect(new Set(Object.values(resolved.right.origins).map((o) => o.kind))).toEqual(new Set(["file"]))
    }
  })

  it("makes the same units as packaging/systemd, directive for directive", () => {
    type NixUnit = {
      command: string
      unit: string
      section: string
      after: Array<string>
      wants: Array<string>
      conflicts: Array<string>
      args: Array<string>
      tcti?: string
      stateDirectory: string
      serviceConfig: Record<string, string | Array<string>>
    }
    const nix = nixEval(`import ${join(root, "nix/units.generated.nix")}`) as Record<string, NixUnit>
    expect(Object.keys(nix).sort()).toEqual(units.map((u) => u.nixName).sort())
    for (const [nixName, u] of Object.entries(nix)) {
      const file = parseUnit(readFileSync(join(root, "packaging/systemd", `${u.unit}.service`), "utf8"))
      const service = { ...file["Service"] }
      const words = (v: Array<string> | undefined) => (v ?? []).flatMap((x) => x.split(" "))
      expect({ nixName, after: words(file["Unit"]?.["After"]), wants: words(file["Unit"]?.["Wants"]), conflicts: words(file["Unit"]?.["Conflicts"]) })
        .toEqual({ nixName, after: u.after, wants: u.wants, conflicts: u.conflicts })
      expect({ nixName, exec: service["ExecStart"] }).toEqual({
        nixName,
        exec: [[EXECUTABLE, u.command, "--config", CONFIG_FILE, ...u.args, ...(u.tcti === undefined ? [] : ["--tcti", u.tcti])].join(" ")]
      })
      expect({ nixName, state: service["StateDirectory"] }).toEqual({ nixName, state: [u.stateDirectory] })
      // the state directory is where the program writes by default
      expect({ nixName, dataDir: `/var/lib/${u.stateDirectory}` }).toEqual({ nixName, dataDir: sections[u.section as "registrar" | "verifier" | "agent"].data_dir.default })
      delete service["ExecStart"]
      delete service["StateDirectory"]
      delete service["EnvironmentFile"]
      const fromNix = Object.fromEntries(Object.entries(u.serviceConfig).map(([k, v]) => [k, typeof v === "string" ? [v] : v]))
      expect({ nixName, service }).toEqual({ nixName, service: fromNix })
    }
  })

  it("parses: flake.nix and every file under nix/ (nix-instantiate --parse)", () => {
    const files = ["flake.nix", ...readdirSync(join(root, "nix")).filter((f) => f.endsWith(".nix")).map((f) => `nix/${f}`)]
    expect(files).toEqual(expect.arrayContaining(["flake.nix", "nix/module.nix", "nix/options.generated.nix", "nix/units.generated.nix", "nix/test.nix"]))
    for (const f of files) {
      const r = run("nix-instantiate", [...noBuildUsers, "--parse", f])
      expect({ file: f, code: r.code, error: r.code === 0 ? "" : r.err }).toEqual({ file: f, code: 0, error: "" })
    }
  })
})
