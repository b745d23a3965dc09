import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { runAttest } from "../support/cli.js"

/** The command reads the real environment (it lists ATTEST_* variables), so set it around the run. */
const attest = (env: Record<string, string>, ...args: Array<string>) =>
  Effect.acquireUseRelease(
    Effect.sync(() => Object.assign(process.env, env)),
    () => runAttest(...args),
    () => Effect.sync(() => Object.keys(env).forEach((k) => delete process.env[k]))
  )

describe("attest config show", () => {
  const dir = mkdtempSync(join(tmpdir(), "attest-show-"))
  const file = join(dir, "attest.toml")
  writeFileSync(file, `[registrar]\nport = 9890\n[verifier]\nquote_interval = 5\n`)

  it.effect("prints every option of the component with its value and source", () => Effect.gen(function*() {
    const r = yield* attest(
      { ATTEST_REGISTRAR_TLS_DIR: "generate", ATTEST_REGISTRAR_DATABASE_URL: "postgres://attest:hunter2@db/attest" },
      "config", "show", "registrar", "--config", file
    )
    expect(r.ok).toBe(true)
    const lines = r.stdout.trim().split("\n")
    expect(lines[0]).toBe("[registrar]")
    expect(lines.find((l) => l.startsWith("port "))).toMatch(new RegExp(`^port = 9890 +# file ${file}: `))
    expect(lines.find((l) => l.startsWith("tls_dir "))).toMatch(/^tls_dir = "generate" +# env ATTEST_REGISTRAR_TLS_DIR: /)
    expect(lines.find((l) => l.startsWith("tls_port "))).toMatch(/^tls_port = 8891 +# default: /)
    expect(r.stdout).toContain(`"postgres://attest:***@db/attest"`)
    expect(r.stdout).not.toContain("hunter2")
  }))

  it.effect("fails naming the section and option for unknown options and bad values", () => Effect.gen(function*() {
    const r = yield* attest({ ATTEST_VERIFIER_QUOTE_INTERVAL: "soon", ATTEST_VERIFIER_TLSDIR: "x" }, "config", "show", "verifier", "--config", file)
    expect(r.ok).toBe(false)
    expect(r.stderr).toContain("[verifier] tlsdir: unknown option (environment variable ATTEST_VERIFIER_TLSDIR)")
    expect(r.stderr).toContain(`[verifier] quote_interval: expected a number of seconds, got "soon" (from environment variable ATTEST_VERIFIER_QUOTE_INTERVAL)`)
  }))
})
