/**
 * `attest config import` over a sample Keylime installation (test/config/keylime/: verifier,
 * registrar, tenant and CA INI files, a verifier.conf.d snippet and the Rust agent's TOML).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import { mkdtempSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { importKeylime, type KeylimeFile, renderImport } from "../../src/config/keylimeImport.js"
import { resolveSection } from "../../src/config/load.js"
import { sectionNames } from "../../src/config/sections.js"
import { parseToml } from "../../src/config/toml.js"
import { runAttest } from "../support/cli.js"
import { spawnAttest } from "../support/spawnAttest.js"

const samples = resolve(__dirname, "keylime")
const FILES = ["verifier.conf", "verifier.conf.d/10-site.conf", "registrar.conf", "tenant.conf", "ca.conf", "keylime-agent.conf"]
const site: Array<KeylimeFile> = FILES.map((f) => ({ path: f, text: readFileSync(join(samples, f), "utf8") }))
const imported = (files: ReadonlyArray<KeylimeFile> = site, keylimeDir = "/var/lib/keylime") => Either.getOrThrow(importKeylime(files, { keylimeDir }))
const valueOf = (r: ReturnType<typeof imported>, section: string, option: string) =>
  r.carried.find((c) => c.section === section && c.option === option)?.value
const skipOf = (r: ReturnType<typeof imported>, section: string, option: string) =>
  r.skipped.filter((s) => s.section === section && s.option === option).map((s) => `${s.kind}: ${s.reason}`)

/** A one-section INI file. */
const ini = (section: string, body: string): KeylimeFile => ({ path: `${section}.conf`, text: `[${section}]\n${body}\n` })

describe("attest config import", () => {
  it("carries Keylime's options over under attest's names, with Keylime's values translated", () => {
    const r = imported()
    expect(r.formats.map((f) => f.format)).toEqual(["INI", "INI", "INI", "INI", "INI", "TOML"])
    expect(valueOf(r, "verifier", "verifier_id")).toBe("lab-verifier-1") // Keylime's uuid
    expect(valueOf(r, "verifier", "trusted_client_ca")).toEqual(["default", "/etc/keylime/oncall-ca.crt"]) // continuation line
    expect(valueOf(r, "verifier", "enable_agent_mtls")).toBe(true) // Python's True
    expect(valueOf(r, "verifier", "request_timeout")).toBe(60) // 60.0
    expect(valueOf(r, "verifier", "quote_interval")).toBe(5) // the .conf.d snippet wins
    expect(valueOf(r, "verifier", "database_url")).toBe("postgresql://keylime:s3cret@db.lab:5432/keylime") // +psycopg2 dropped
    expect(valueOf(r, "registrar", "database_url")).toBe("") // Keylime's "sqlite": attest's own SQLite
    expect(valueOf(r, "verifier", "database_pool_max")).toBe(15) // database_pool_sz_ovfl = 5,10: size plus overflow
    expect(valueOf(r, "tenant", "ek_ca_dir")).toBe("/var/lib/keylime/tpm_cert_store") // tpm_cert_store
    expect(valueOf(r, "tenant", "accept_tpm_hash_algs")).toEqual(["sha512", "sha384", "sha256"]) // Python list
    expect(valueOf(r, "agent", "uuid")).toBe("hash_ek")
    expect(valueOf(r, "agent", "ima_ml_path")).toBe("/sys/kernel/security/ima/ascii_runtime_measurements") // "default"
    expect(valueOf(r, "agent", "contact_ip")).toBe("10.0.1.17")
  })

  it("writes Keylime's CA directory and TPM certificate store where the files leave them to Keylime's defaults", () => {
    const r = imported()
    for (const s of ["verifier", "registrar", "tenant", "agent"]) expect(valueOf(r, s, "ca_dir")).toBe("/var/lib/keylime/cv_ca")
    expect(valueOf(r, "registrar", "ek_ca_dir")).toBe("/var/lib/keylime/tpm_cert_store") // the tenant's store
    const elsewhere = imported([ini("registrar", "port = 8890")], "/srv/keylime")
    expect(valueOf(elsewhere, "registrar", "ca_dir")).toBe("/srv/keylime/cv_ca")
    expect(valueOf(elsewhere, "registrar", "ek_ca_dir")).toBe("/srv/keylime/tpm_cert_store")
  })

  it("accounts for every option of every file: carried over, or listed with the reason", () => {
    const r = imported()
    for (const f of site) {
      const options: Array<string> = []
      let section = ""
      for (const line of f.text.split("\n")) {
        const header = /^\[(.+)\]$/.exec(line.trim())
        if (header) section = header[1]!
        const opt = /^([a-z_]+)\s*=/.exec(line)
        if (opt) options.push(`${section}.${opt[1]}`)
      }
      for (const o of options) {
        const [section, option] = o.split(".") as [string, string]
        const fromFile = r.carried.some((c) => c.source.file === f.path && ((c.section === section &&
          (c.option === option || c.source.keylimeOption === option)) || c.source.keylimeOption === `[${section}] ${option}`))
        const listed = r.skipped.some((s) => s.file === f.path && s.section === section && s.option === option)
        expect({ file: f.path, option: o, accounted: fromFile || listed }).toEqual({ file: f.path, option: o, accounted: true })
      }
    }
  })

  it("says why an option is not carried over: unknown, not applicable, or a value attest does not support", () => {
    const r = imported()
    expect(skipOf(r, "verifier", "measured_boot_imports")).toEqual(["unknown to attest: attest's [verifier] has no option measured_boot_imports"])
    expect(skipOf(r, "verifier", "severity_policy")).toEqual([])
    expect(skipOf(r, "revocations", "zmq_port")[0]).toMatch(/^not applicable: attest has no ZeroMQ revocation notifier; its notifiers are \[verifier\] enabled_revocation_notifications/)
    expect(skipOf(r, "verifier", "num_workers")[0]).toMatch(/^not applicable: attest serves every request from one process/)
    expect(skipOf(r, "verifier", "quote_interval")).toEqual(["not applicable: overridden by verifier.conf.d/10-site.conf:3"])
    expect(skipOf(r, "ca", "cert_lifetime")).toEqual(["not applicable: give the validity to `attest ca issue-admin --days <n>` (365 by default)"])
    expect(skipOf(r, "agent", "run_as")[0]).toMatch(/^not applicable: /)

    const odd = imported([
      ini("registrar", "database_url = mysql+pymysql://k:p@db/keylime\nport = eighty\nserver_key_password = hunter2"),
      { path: "keylime-agent.conf", text: `[agent]\nuuid = "generate"\ntpm_hash_alg = "sm3_256"\nserver_cert = "certs/agent.crt"\nkeylime_dir = "/opt/kl"\n` }
    ])
    expect(skipOf(odd, "registrar", "database_url")).toEqual(["value not supported: attest stores data in SQLite or PostgreSQL (postgresql://…)"])
    expect(skipOf(odd, "registrar", "port")).toEqual([`value not supported: expected an integer, got "eighty"`])
    expect(skipOf(odd, "registrar", "server_key_password")[0]).toMatch(/^value not supported: attest reads unencrypted private keys/)
    expect(skipOf(odd, "agent", "uuid")[0]).toMatch(/^value not supported: attest's agent takes a fixed UUID or hash_ek/)
    expect(skipOf(odd, "agent", "tpm_hash_alg")).toEqual([`value not supported: expected one of sha1, sha256, sha384, sha512, got "sm3_256"`])
    // the agent's relative paths are relative to its keylime_dir
    expect(valueOf(odd, "agent", "server_cert")).toBe("/opt/kl/certs/agent.crt")
    expect(valueOf(odd, "agent", "ca_dir")).toBe("/opt/kl/cv_ca")
  })

  it("resolves a relative tls_dir against Keylime's directory and reads Keylime 6's single file as such", () => {
    const r = imported([ini("verifier", "tls_dir = mytls"), ini("cloud_verifier", "cloudverifier_port = 8881")], "/srv/kl")
    expect(valueOf(r, "verifier", "tls_dir")).toBe("/srv/kl/mytls")
    expect(skipOf(r, "cloud_verifier", "cloudverifier_port")[0]).toMatch(/keylime_upgrade_config/)
  })

  it("keeps the first of two Keylime options that land on the same attest option and lists the other", () => {
    const r = imported([ini("verifier", "uuid = from-uuid\nverifier_id = from-attest-name")])
    expect(valueOf(r, "verifier", "verifier_id")).toBe("from-uuid")
    expect(skipOf(r, "verifier", "verifier_id")).toEqual(["not applicable: attest's verifier_id is already set from verifier.conf:2 (uuid)"])
  })

  it("produces TOML that attest's loader accepts for every section", () => {
    const toml = renderImport(imported())
    const doc = Either.getOrThrow(parseToml(toml))
    for (const s of sectionNames) {
      const r = resolveSection(s, { env: {}, file: { path: "imported.toml", doc } })
      expect(Either.isRight(r) ? "loads" : r.left.message).toBe("loads")
    }
    expect(toml).toContain(`verifier_id = "lab-verifier-1"`)
    expect(toml).toMatch(/verifier_id = "lab-verifier-1" +# verifier\.conf:4 \(uuid\)/)
  })

  it("refuses a file that is neither Keylime INI nor the agent's TOML, naming the file and line", () => {
    const r = importKeylime([{ path: "broken.conf", text: "[verifier]\nport = 1\nthis is not an option\n" }], { keylimeDir: "/var/lib/keylime" })
    expect(Either.isLeft(r) ? r.left.message : "").toMatch(/^broken\.conf is neither a Keylime INI file \(line 3: expected 'option = value'/)
  })

  it.effect("runs in-process: writes the file, which `attest config show` then reads", () =>
    Effect.gen(function*() {
      const out = join(mkdtempSync(join(tmpdir(), "attest-import-")), "attest.toml")
      const r = yield* runAttest("config", "import", ...FILES.map((f) => join(samples, f)), "--out", out)
      expect(r.stderr).toContain("attest config import: carried over")
      expect(r.stderr).toMatch(/\[verifier\] measured_boot_imports: unknown to attest/)
      expect(r.ok).toBe(true)
      const show = yield* runAttest("config", "show", "verifier", "--config", out)
      expect(show.stderr).toBe("")
      expect(show.stdout).toMatch(new RegExp(`^verifier_id = "lab-verifier-1" +# file ${out}: `, "m"))
      expect(show.stdout).toMatch(/^quote_interval = 5 /m)
      const again = yield* runAttest("config", "import", join(samples, "registrar.conf"), "--out", out)
      expect(again.ok).toBe(false)
      expect(again.stderr).toContain(`${out} exists; give --force to replace it`)
    }))

  it("runs as a command: TOML on stdout, the options left out on stderr", async () => {
    const r = await spawnAttest("config", "import", join(samples, "tenant.conf"), join(samples, "keylime-agent.conf"))
    expect(r.code).toBe(0)
    expect(r.out).toMatch(/^\[tenant\]$/m)
    expect(r.out).toMatch(/^\[agent\]$/m)
    expect(r.err).toMatch(/keylime-agent\.conf:\d+ \[agent\] run_as: not applicable: /)
    const doc = Either.getOrThrow(parseToml(r.out))
    expect(Either.isRight(resolveSection("agent", { env: {}, file: { path: "stdout", doc } }))).toBe(true)
  })
  it("carries [revocations]' notifier list and webhook URL over into [verifier], leaving out ZeroMQ", () => {
    const r = imported([ini("revocations", "enabled_revocation_notifications = ['agent', 'zeromq', 'webhook']\nwebhook_url = https://hooks.example/keylime\nzmq_port = 8992")])
    expect([valueOf(r, "verifier", "enabled_revocation_notifications"), valueOf(r, "verifier", "webhook_url")]).toEqual([["agent", "webhook"], "https://hooks.example/keylime"])
    const source = r.carried.find((c) => c.option === "enabled_revocation_notifications")!.source
    expect([source.keylimeOption, source.note]).toEqual(["[revocations] enabled_revocation_notifications", "zeromq left out: attest has no ZeroMQ notifier (agent: POST to the agents; webhook: POST to webhook_url)"])
  })

  it("reads the Rust agent's file by its content under its installed name agent.conf, and refuses a Jinja2 template saying what to give", () => {
    const agent = imported([{ path: "/etc/keylime/agent.conf", text: `[agent]\nuuid = "hash_ek"\nport = 9002\n` }])
    expect(valueOf(agent, "agent", "uuid")).toBe("hash_ek")
    const template = importKeylime([{ path: "templates/2.0/verifier.j2", text: `[verifier]\n# a comment\nip = {{ verifier.ip }}\n` }], { keylimeDir: "/var/lib/keylime" })
    expect(Either.isLeft(template) && template.left.message).toEqual(
      "templates/2.0/verifier.j2:3 is a Jinja2 template (Keylime's source tree, templates/): attest reads the files Keylime installs from them. " +
        "Give the installed file (/etc/keylime/verifier.conf, registrar.conf, tenant.conf, ca.conf, agent.conf), or render the templates first with Keylime's keylime_upgrade_config, which writes those files"
    )
  })
})
