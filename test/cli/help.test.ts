/**
 * `attest` as a person types it (in-process, src/cli/Root.ts `run`): help for every command as
 * plain text (no ANSI colours, no lines padded out, no doubled command names), a misspelt
 * subcommand answered with its group's commands, options after positional arguments, and one
 * rule for usage errors: `attest <command>: <what>` and exit 2.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { optionsFirst, prepareArgv } from "../../src/cli/argv.js"
import { type CommandInfo, commandTree } from "../../src/cli/commandTree.js"
import { renderHelp } from "../../src/cli/help.js"
import { rootCommand } from "../../src/cli/Root.js"
import { runAttest } from "../support/cli.js"

const all = (c: CommandInfo): Array<CommandInfo> => [c, ...c.children.flatMap(all)]
const tree = commandTree(rootCommand)

describe("attest --help", () => {
  it("every command has a description, and no command's path or usage line repeats a word", () => {
    const commands = all(tree)
    expect(commands.length).toBeGreaterThan(50)
    expect(commands.filter((c) => c.description === "").map((c) => c.path.join(" "))).toEqual([])
    const doubled = (text: string) => /(^|\s)([a-z][\w-]*) \2(\s|$)/.test(text)
    const pages = commands.map((c) => [c.path.join(" "), renderHelp(c, 100)] as const)
    expect(pages.filter(([, page]) => page.split("\n").some((l) => l.startsWith("Usage:") && doubled(l))).map(([p]) => p)).toEqual([])
    expect(pages.filter(([, page]) => page.split("\n").some((l) => l.length > 100 && !/\S{60,}/.test(l))).map(([p]) => p)).toEqual([])
  })

  it("a group with options of its own runs alone (attest verifier); a group without shows its help", () => {
    const route = (...args: Array<string>) => {
      const p = prepareArgv(tree, ["node", "attest", ...args])
      return p._tag === "Help" ? `help ${p.command.path.join(" ")}` : p._tag
    }
    expect([route("verifier"), route("verifier", "--config", "f"), route("verifier", "cluster"), route("verifier", "cluster", "status"), route("ca")])
      .toEqual(["Run", "Run", "help attest verifier cluster", "Run", "help attest ca"])
    const verifier = tree.children.find((c) => c.name === "verifier")!
    expect(renderHelp(verifier, 100).split("\n").find((l) => l.startsWith("Usage:"))).toEqual("Usage: attest verifier [<command>] [options]")
  })

  it.effect("prints plain text within the width: no colours, nothing padded", () =>
    Effect.gen(function*() {
      const r = yield* runAttest("policy", "create", "runtime", "--help")
      const lines = r.stdout.trimEnd().split("\n")
      expect({
        code: r.code,
        first: lines[0],
        usage: lines.find((l) => l.startsWith("Usage:")),
        ansi: /\x1b\[/.test(r.stdout),
        longest: Math.max(...lines.map((l) => l.length)) <= 100,
        trailingSpaces: lines.filter((l) => / $/.test(l)).length
      }).toEqual({
        code: 0,
        first: "attest policy create runtime: Create a runtime (IMA) policy from a directory tree, an IMA list or a",
        usage: "Usage: attest policy create runtime [options]",
        ansi: false,
        longest: true,
        trailingSpaces: 0
      })
      expect(r.stdout).toContain("  --hash-alg <sha1 | sha256 | sha384 | sha512>\n")
      const group = yield* runAttest("tenant", "--help")
      expect(group.stdout).toMatch(/^Commands:\n {2}add +Enrol an agent/m)
      expect(group.stdout).toMatch(/^ {2}runtime-policy add +Store a runtime \(IMA\) policy under a name\.$/m)
      const policy = yield* runAttest("policy", "--help")
      expect(policy.stdout).toMatch(/^ {2}create runtime +Create a runtime/m)
    }))

  it.effect("a misspelt subcommand names its group's commands, exit 2", () =>
    Effect.gen(function*() {
      const r = yield* runAttest("tenant", "lst")
      expect([r.code, r.stderr]).toEqual([
        2,
        "attest tenant: unknown command 'lst' (did you mean list?); its commands: add, update, delete, status, list, reactivate, stop, bulkinfo, reglist, regstatus, regdelete, runtime-policy, mb-policy"
      ])
      const nested = yield* runAttest("policy", "create", "runtim")
      expect(nested.stderr).toEqual("attest policy create: unknown command 'runtim' (did you mean runtime?); its commands: runtime, measured-boot")
    }))

  it.effect("usage errors are one line 'attest <command>: …', exit 2: a missing file, a bad integer, a missing option", () =>
    Effect.gen(function*() {
      const missing = yield* runAttest("policy", "check", "--policy", "/no/such/policy.json", "--ima-list", "/no/such/list")
      const integer = yield* runAttest("up", "--agents", "abc")
      const option = yield* runAttest("tenant", "status")
      expect([missing, integer, option].map((r) => [r.code, r.stderr])).toEqual([
        [2, "attest policy check: '/no/such/policy.json' does not exist; '/no/such/list' does not exist ('attest policy check --help' lists its options)"],
        [2, "attest up: 'abc' is not an integer ('attest up --help' lists its options)"],
        [2, "attest tenant status: Expected to find option: '--uuid' ('attest tenant status --help' lists its options)"]
      ])
      const rootfs = yield* runAttest("policy", "create", "runtime", "--rootfs", "/no/such/dir")
      expect([rootfs.code, rootfs.stderr]).toEqual([2, "attest policy create runtime: '/no/such/dir' does not exist ('attest policy create runtime --help' lists its options)"])
    }))

  it.effect("up --tamper with a number beyond its agents is a usage error before anything starts", () =>
    Effect.gen(function*() {
      const dir = mkdtempSync(join(tmpdir(), "attest-up-tamper-"))
      const r = yield* runAttest("up", "--tamper", "9", "--data-dir", join(dir, "data"))
      expect([r.code, r.stderr]).toEqual([2, "attest up: --tamper 9: no such agent; give its number 1-3 (or its uuid)"])
    }))

  it.effect("options may follow positional arguments", () =>
    Effect.gen(function*() {
      const dir = mkdtempSync(join(tmpdir(), "attest-argv-"))
      const file = join(dir, "out.toml")
      writeFileSync(join(dir, "verifier.conf"), "[verifier]\nquote_interval = 5\n")
      const r = yield* runAttest("config", "import", join(dir, "verifier.conf"), "--out", file)
      expect([r.code, r.stderr.includes("unknown argument")]).toEqual([0, false])
    }))

  it("moves a leaf's options (with their values) before its positional arguments; -- ends options", () => {
    const leaf = all(tree).find((c) => c.path.join(" ") === "attest ear verify")!
    expect(optionsFirst(leaf, ["-", "--jwks", "f", "--json"])).toEqual(["--jwks", "f", "--json", "-"])
    expect(optionsFirst(leaf, ["--jwks=f", "tok", "--", "--json"])).toEqual(["--jwks=f", "tok", "--", "--json"])
    expect(prepareArgv(tree, ["node", "attest", "ear", "verify", "-", "--jwks", "f"])).toMatchObject({ _tag: "Run", argv: ["node", "attest", "ear", "verify", "--jwks", "f", "-"] })
    expect(prepareArgv(tree, ["node", "attest", "--version"])).toMatchObject({ _tag: "Run" })
  })
})
