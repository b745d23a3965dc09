/**
 * packaging/: the plain systemd units pass `systemd-analyze verify`, keep the exposure score their
 * hardening gives them, their sysusers.d and tmpfiles.d snippets apply, and the example
 * attest.toml loads as the program's defaults.
 *
 * `verify` refuses a unit whose ExecStart= binary does not exist, and attest is not installed at
 * /usr/local/bin here: the units are verified in a temporary root (`--root`) holding this host's
 * systemd units, ours, and an executable stub at that path. Everything else is systemd's own check.
 */
import { describe, expect, it } from "@effect/vitest"
import { spawnSync } from "node:child_process"
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { Either } from "effect"
import { resolveSection, sectionDefaults } from "../../src/config/load.js"
import type { SectionSpec } from "../../src/config/option.js"
import { sectionNames, sections } from "../../src/config/sections.js"
import { parseToml } from "../../src/config/toml.js"
import { EXECUTABLE } from "../../scripts/nix/packaging.js"
import { unitName, units } from "../../scripts/nix/units.js"
import { requireOrSkip } from "../support/requirements.js"

const root = resolve(__dirname, "../..")
const unitFiles = units.map((u) => `${unitName(u)}.service`)

const run = (command: string, args: ReadonlyArray<string>) => {
  const r = spawnSync(command, args, { encoding: "utf8" })
  return { code: r.status, out: r.stdout ?? "", err: r.stderr ?? "" }
}

const systemdUnitDir = ["/usr/lib/systemd/system", "/lib/systemd/system"].find((d) => existsSync(join(d, "sysinit.target")))
const hasSystemd = requireOrSkip(
  "systemd-analyze, systemd-sysusers, systemd-tmpfiles and systemd's units",
  ["systemd-analyze", "systemd-sysusers", "systemd-tmpfiles"].every((c) => run(c, ["--version"]).code === 0) && systemdUnitDir !== undefined,
  "apt-get install -y systemd"
)

/** A root with this host's units, ours (or the given texts) and a stub executable at ExecStart's path. */
const unitRoot = (texts: Record<string, string> = {}): string => {
  const dir = mkdtempSync(join(tmpdir(), "attest-units-"))
  cpSync(systemdUnitDir!, join(dir, "usr/lib/systemd/system"), { recursive: true })
  mkdirSync(join(dir, "etc/systemd/system"), { recursive: true })
  for (const f of unitFiles) {
    writeFileSync(join(dir, "etc/systemd/system", f), texts[f] ?? readFileSync(join(root, "packaging/systemd", f), "utf8"))
  }
  const exe = join(dir, EXECUTABLE)
  mkdirSync(join(exe, ".."), { recursive: true })
  writeFileSync(exe, "#!/bin/sh\nexit 1\n")
  chmodSync(exe, 0o755)
  return dir
}

describe.skipIf(!hasSystemd)("packaging/systemd", () => {
  it("passes systemd-analyze verify: every directive known, every dependency found, ExecStart executable", () => {
    const r = run("systemd-analyze", ["verify", `--root=${unitRoot()}`, ...unitFiles])
    expect({ code: r.code, stderr: r.err }).toEqual({ code: 0, stderr: "" })
  })

  it("the check is not empty: a misspelt directive and a missing executable are reported", () => {
    const text = readFileSync(join(root, "packaging/systemd/attest-verifier.service"), "utf8")
    const dir = unitRoot({ "attest-verifier.service": text.replace("ProtectSystem=", "ProtectSytem=") })
    expect(run("systemd-analyze", ["verify", `--root=${dir}`, "attest-verifier.service"]).err).toContain("Unknown key 'ProtectSytem'")
    writeFileSync(join(dir, EXECUTABLE), "")
    chmodSync(join(dir, EXECUTABLE), 0o644)
    expect(run("systemd-analyze", ["verify", `--root=${dir}`, "attest-verifier.service"]).err).toContain(`Command ${EXECUTABLE} is not executable`)
  })

  it("keeps systemd's exposure score: 1.2 for the servers, 1.9 for the agents (one capability, the TPM device)", () => {
    const dir = unitRoot()
    for (const u of units) {
      const threshold = u.section === "agent" ? 19 : 12
      const r = run("systemd-analyze", ["security", "--offline=yes", `--root=${dir}`, `--threshold=${threshold}`, `${unitName(u)}.service`])
      const score = /Overall exposure level for \S+: ([\d.]+)/.exec(r.out)?.[1]
      expect({ unit: unitName(u), code: r.code, score }).toEqual({ unit: unitName(u), code: 0, score: (threshold / 10).toFixed(1) })
    }
  })
})

const isRoot = process.getuid?.() === 0
describe.skipIf(!hasSystemd || !requireOrSkip("root (tmpfiles chowns in a temporary root)", isRoot, "run as root, as CI does"))(
  "packaging/sysusers.d and tmpfiles.d",
  () => {
    it("create the attest user, the tss group and the directories in an empty root", () => {
      const dir = mkdtempSync(join(tmpdir(), "attest-sysroot-"))
      mkdirSync(join(dir, "etc"))
      const sysusers = run("systemd-sysusers", [`--root=${dir}`, join(root, "packaging/sysusers.d/attest.conf")])
      expect({ code: sysusers.code }).toEqual({ code: 0 })
      const passwd = readFileSync(join(dir, "etc/passwd"), "utf8")
      const group = readFileSync(join(dir, "etc/group"), "utf8")
      const user = /^attest:x:(\d+):(\d+):[^:]*:\/var\/lib\/attest:/m.exec(passwd)
      expect(user === null ? passwd : "attest user").toBe("attest user")
      expect(/^tss:x:\d+:/m.test(group) && /^attest:x:\d+:/m.test(group)).toBe(true)

      const tmpfiles = run("systemd-tmpfiles", ["--create", `--root=${dir}`, join(root, "packaging/tmpfiles.d/attest.conf")])
      expect({ code: tmpfiles.code, stderr: tmpfiles.err }).toEqual({ code: 0, stderr: "" })
      const made = (p: string) => {
        const s = statSync(join(dir, p))
        return { path: p, mode: (s.mode & 0o7777).toString(8), uid: s.uid }
      }
      const uid = Number(user![1])
      expect([made("etc/attest"), made("var/lib/attest"), made("var/lib/attest/tpm_cert_store")]).toEqual([
        { path: "etc/attest", mode: "755", uid: 0 },
        { path: "var/lib/attest", mode: "750", uid },
        { path: "var/lib/attest/tpm_cert_store", mode: "750", uid }
      ])
    })
  }
)

describe("packaging/attest.toml", () => {
  const text = readFileSync(join(root, "packaging/attest.toml"), "utf8")
  const load = (toml: string) => {
    const doc = Either.getOrThrow(parseToml(toml))
    return sectionNames.map((name) => ({ name, resolved: resolveSection(name, { env: {}, file: { path: "attest.toml", doc, text: toml } }) }))
  }

  it("loads as shipped, every value the program's default", () => {
    for (const { name, resolved } of load(text)) {
      expect({ name, values: Either.getOrThrow(resolved).values }).toEqual({ name, values: sectionDefaults(sections[name] as SectionSpec) })
    }
  })

  it("lists every option with its default: uncommented, each one loads from the file as the same value", () => {
    const uncommented = text.replace(/^# ([a-z_]+ = )/gm, "$1")
    for (const { name, resolved } of load(uncommented)) {
      const r = Either.getOrThrow(resolved)
      expect({ name, values: r.values }).toEqual({ name, values: sectionDefaults(sections[name] as SectionSpec) })
      const notFromFile = Object.entries(r.origins).filter(([, o]) => o.kind !== "file").map(([k]) => k)
      expect({ name, notFromFile }).toEqual({ name, notFromFile: [] })
    }
  })
})
