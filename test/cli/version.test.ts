import { describe, expect, it } from "@effect/vitest"
import { execFileSync } from "node:child_process"

const attest = (...args: Array<string>) =>
  execFileSync(process.execPath, ["--import", "tsx", "src/cli/bin.ts", ...args], { encoding: "utf8" })

describe("attest executable", () => {
  it("prints the package version with --version", () => {
    expect(attest("--version").trim()).toMatch(/^(attest )?v?0\.1\.0$/)
  })
  it("lists the tpm subcommand in --help", () => {
    expect(attest("--help")).toContain("tpm")
  })
})
