import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Either, FastCheck, Layer, Option } from "effect"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type ConfigSources as Sources, resolveSection, sectionConfig } from "../../src/config/load.js"
import { sectionNames, sections } from "../../src/config/sections.js"
import { ConfigSources, readSources, RegistrarConfig, VerifierConfig } from "../../src/config/services.js"
import { parseToml } from "../../src/config/toml.js"

const file = (text: string): NonNullable<Sources["file"]> => ({ path: "/etc/attest.toml", doc: Either.getOrThrow(parseToml(text)) })

describe("configuration", () => {
  it("uses defaults, then the file, then the environment, and says where each value came from", () => {
    const r = Either.getOrThrow(resolveSection("registrar", {
      env: { ATTEST_REGISTRAR_TLS_PORT: "9891", PATH: "/bin", ATTEST_TEST_ALL: "1" },
      file: file(`[registrar]\nport = 9890\ntls_port = 1\ntrusted_client_ca = ["a.crt", "b.crt"]\n`)
    }))
    expect(r.values.port).toBe(9890)
    expect(r.values.tls_port).toBe(9891)
    expect(r.values.ip).toBe("127.0.0.1")
    expect(r.values.trusted_client_ca).toEqual(["a.crt", "b.crt"])
    expect(r.origins.port).toEqual({ kind: "file", path: "/etc/attest.toml" })
    expect(r.origins.tls_port).toEqual({ kind: "env", variable: "ATTEST_REGISTRAR_TLS_PORT" })
    expect(r.origins.ip).toEqual({ kind: "default" })
  })

  it("reads lists from the environment as comma-separated or Keylime-style lists", () => {
    const r = (v: string) => Either.getOrThrow(resolveSection("tenant", { env: { ATTEST_TENANT_ACCEPT_TPM_HASH_ALGS: v } })).values.accept_tpm_hash_algs
    expect(r("sha256, sha384")).toEqual(["sha256", "sha384"])
    expect(r(`['sha256', "sha1"]`)).toEqual(["sha256", "sha1"])
    expect(r("")).toEqual([])
  })

  it("reads Keylime-style booleans", () => {
    const r = (v: string) => resolveSection("verifier", { env: { ATTEST_VERIFIER_ENABLE_AGENT_MTLS: v } })
    expect(Either.getOrThrow(r("False")).values.enable_agent_mtls).toBe(false)
    expect(Either.getOrThrow(r("yes")).values.enable_agent_mtls).toBe(true)
    expect(Either.isLeft(r("maybe"))).toBe(true)
  })

  it("rejects bad values naming the section, the option, the reason and the source", () => {
    const r = resolveSection("registrar", {
      env: { ATTEST_REGISTRAR_PORT: "eighty" },
      file: file(`[registrar]\ntls_port = 70000\nauthorization_provider = "ldap"\ndata_dir = 5\n`)
    })
    expect(Either.isLeft(r)).toBe(true)
    const problems = Either.isLeft(r) ? r.left.problems : []
    expect(problems).toEqual([
      { section: "registrar", option: "port", reason: `expected an integer, got "eighty" (from environment variable ATTEST_REGISTRAR_PORT)` },
      { section: "registrar", option: "tls_port", reason: "must be at most 65535, got 70000 (from /etc/attest.toml)" },
      { section: "registrar", option: "data_dir", reason: "expected a string, got 5 (from /etc/attest.toml)" },
      { section: "registrar", option: "authorization_provider", reason: `expected one of simple, got "ldap" (from /etc/attest.toml)` }
    ])
    expect(Either.isLeft(r) && r.left.message).toContain("[registrar] tls_port: must be at most 65535")
  })

  it("rejects unknown options in the file and the environment, and unknown sections", () => {
    const r = resolveSection("agent", {
      env: { ATTEST_VERIFIER_QUOTE_INTERVALL: "2" },
      file: file(`top = 1\n[registrar]\ntls_dri = "x"\n[cloud_verifier]\nport = 1\n`)
    })
    const problems = Either.isLeft(r) ? r.left.problems.map((p) => `${p.section}.${p.option}`) : []
    expect(problems).toEqual(["(top level).top", "registrar.tls_dri", "cloud_verifier.port", "verifier.quote_intervall"])
  })

  it.effect("builds the RegistrarConfig service from a TOML file and the environment", () =>
    Effect.gen(function*() {
      const dir = mkdtempSync(join(tmpdir(), "attest-config-"))
      const path = join(dir, "attest.toml")
      writeFileSync(path, `[registrar]\ntls_dir = "generate"\n[verifier]\nquote_interval = 0.5\n`)
      const sources = yield* readSources(Option.some(path))
      const layer = Layer.merge(RegistrarConfig.layer, VerifierConfig.layer).pipe(
        Layer.provide(ConfigSources.make({ ...sources, env: { ATTEST_REGISTRAR_PORT: "18890" } }))
      )
      const [reg, ver] = yield* Effect.all([RegistrarConfig, VerifierConfig]).pipe(Effect.provide(layer))
      expect(reg.tls_dir).toBe("generate")
      expect(reg.port).toBe(18890)
      expect(ver.quote_interval).toBe(0.5)
    }))

  it.effect("fails at start-up on a config file with a syntax error, naming the line", () =>
    Effect.gen(function*() {
      const dir = mkdtempSync(join(tmpdir(), "attest-config-"))
      const path = join(dir, "bad.toml")
      writeFileSync(path, `[registrar]\nport = 8890\nip = 127.0.0.1.5\n`)
      const e = yield* Effect.flip(readSources(Option.some(path)))
      expect(e.message).toContain(`${path}: line 3: column 11: illegal character in numeric literal: ip = 127.0.0.1.5`)
      const missing = yield* Effect.flip(readSources(Option.some(join(dir, "nope.toml"))))
      expect(missing.message).toContain("cannot read the config file")
    }))

  it.effect("loads a file written with inline tables, dotted keys, multi-line strings, escapes and dates", () =>
    Effect.gen(function*() {
      const dir = mkdtempSync(join(tmpdir(), "attest-config-"))
      const path = join(dir, "attest.toml")
      writeFileSync(path, [
        `registrar.port = 9890`,
        `tenant = { verifier_ip = "10.0.0.1", accept_tpm_hash_algs = ["sha256"] }`,
        `[verifier]`,
        `verifier_id = 2024-01-31`,
        `database_url = """`,
        `postgres://attest@db\\u002Eexample/attest"""`,
        `trusted_client_ca = ['''/etc/ca/a.crt''', "b\\tc.crt"]`,
        ``
      ].join("\n"))
      const sources = yield* readSources(Option.some(path))
      const get = <N extends "registrar" | "tenant" | "verifier">(n: N) => Either.getOrThrow(resolveSection(n, { ...sources, env: {} })).values
      expect(get("registrar").port).toBe(9890)
      expect(get("tenant").verifier_ip).toBe("10.0.0.1")
      expect(get("tenant").accept_tpm_hash_algs).toEqual(["sha256"])
      expect(get("verifier").verifier_id).toBe("2024-01-31")
      expect(get("verifier").database_url).toBe("postgres://attest@db.example/attest")
      expect(get("verifier").trusted_client_ca).toEqual(["/etc/ca/a.crt", "b\tc.crt"])
    }))

  it("reports a nested table in a section as an unknown option or a type error naming it", () => {
    const r = resolveSection("registrar", {
      env: {},
      file: file(`[registrar]\nport = { number = 1 }\n[registrar.tls]\ndir = "x"\n[verifier]\nextra.key = 1\n`)
    })
    const problems = Either.isLeft(r) ? r.left.problems : []
    expect(problems.map((p) => `[${p.section}] ${p.option}`)).toEqual(["[registrar] tls", "[verifier] extra", "[registrar] port"])
    expect(problems[0]!.reason).toContain("unknown option (a table")
    expect(problems[2]!.reason).toBe(`expected an integer, got {"number":1} (from /etc/attest.toml)`)
  })

  it("names the line of a plainly written option in value and unknown-option errors", () => {
    const text = `[registrar]\n# listen\nport = "eighty"\ntls_prot = 1\n`
    const r = resolveSection("registrar", { env: {}, file: { ...file(text), text } })
    const reasons = Either.isLeft(r) ? r.left.problems.map((p) => `[${p.section}] ${p.option}: ${p.reason}`) : []
    expect(reasons).toEqual([
      "[registrar] tls_prot: unknown option in /etc/attest.toml line 4",
      `[registrar] port: expected an integer, got "eighty" (from /etc/attest.toml line 3)`
    ])
  })

  it("explains that a top-level array of tables is not a section", () => {
    const r = resolveSection("agent", { env: {}, file: file(`[[agent]]\nuuid = "x"\n`) })
    expect(Either.isLeft(r) ? r.left.message : "").toContain("[(top level)] agent: [[agent]] is an array of tables; a section is one table [agent]")
  })

  it.effect("lets tests provide values directly over the defaults", () =>
    Effect.gen(function*() {
      const reg = yield* RegistrarConfig
      expect(reg.port).toBe(0)
      expect(reg.tls_port).toBe(8891)
    }).pipe(Effect.provide(RegistrarConfig.test({ port: 0 }))))

  it.effect("reads a section as an Effect Config from the current ConfigProvider", () =>
    Effect.gen(function*() {
      const provider = ConfigProvider.fromMap(new Map([["registrar.port", "0"], ["registrar.trusted_client_ca", "a.crt,b.crt"]]))
      const reg = yield* Effect.withConfigProvider(sectionConfig("registrar"), provider)
      expect(reg.port).toBe(0)
      expect(reg.trusted_client_ca).toEqual(["a.crt", "b.crt"])
      expect(reg.tls_port).toBe(8891)
      const bad = yield* Effect.flip(Effect.withConfigProvider(sectionConfig("registrar"), ConfigProvider.fromMap(new Map([["registrar.tls_port", "x"]]))))
      expect(String(bad)).toContain("registrar.tls_port")
      expect(String(bad)).toContain(`expected an integer, got "x"`)
    }))

  it("decodes any value of any option to a value or a named problem, never an exception", () => {
    const raw = FastCheck.oneof(
      FastCheck.string(), FastCheck.double(), FastCheck.integer(), FastCheck.boolean(),
      FastCheck.array(FastCheck.oneof(FastCheck.string(), FastCheck.integer()), { maxLength: 3 })
    )
    FastCheck.assert(FastCheck.property(FastCheck.constantFrom(...sectionNames), raw, FastCheck.nat(), (section, value, pick) => {
      const options = Object.keys(sections[section])
      const option = options[pick % options.length]!
      const r = resolveSection(section, { env: {}, file: { path: "f.toml", doc: { [section]: { [option]: value } } } })
      return Either.isRight(r) || (r.left.problems.length === 1 && r.left.problems[0]!.option === option)
    }), { numRuns: 500 })
  })
})
