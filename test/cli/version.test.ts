import { describe, expect, it } from "@effect/vitest"
import { spawnAttest } from "../support/spawnAttest.js"

describe("attest executable", () => {
  it("prints the package version with --version", async () => {
    expect((await spawnAttest("--version")).out.trim()).toMatch(/^(attest )?v?0\.1\.0$/)
  })
  it("lists every subcommand in --help", async () => {
    const help = (await spawnAttest("--help")).out
    for (const c of ["tpm", "policy", "ca", "config", "registrar", "agent", "up"]) expect(help).toContain(c)
  })
})
