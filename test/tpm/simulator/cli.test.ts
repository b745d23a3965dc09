/** `attest tpm simulate` and `attest tpm verify-quote`, run as a user would run them. */
import { describe, expect, it } from "@effect/vitest"
import { execFile } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { afterAll, beforeAll } from "vitest"
import { attestArgs } from "../../support/attestBin.js"

const root = resolve(import.meta.dirname, "../../..")

const attest = (args: ReadonlyArray<string>): Promise<{ code: number; stdout: string; stderr: string }> =>
  new Promise((done) => {
    execFile(process.execPath, attestArgs(args), { cwd: root, timeout: 120_000 }, (error, stdout, stderr) =>
      done({ code: error ? (typeof error.code === "number" ? error.code : 1) : 0, stdout, stderr }))
  })

const field = (out: string, name: string): string => {
  const line = out.split("\n").find((l) => l.startsWith(`${name}: `))
  if (line === undefined) throw new Error(`no ${name} in output:\n${out}`)
  return line.slice(name.length + 2)
}

describe("attest tpm", () => {
  let dir = ""
  let simulated = { code: -1, stdout: "", stderr: "" }
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "attest-cli-"))
    simulated = await attest(["tpm", "simulate", "--seed", "cli test", "--ak-alg", "rsa", "--pcrs", "sha1:10+sha256:0,10,16", "--write-ak", join(dir, "ak.pub")])
  }, 120_000)
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it("simulate prints an EK, an AK, a nonce and a Keylime quote string", () => {
    expect(simulated.code).toBe(0)
    expect(field(simulated.stdout, "quote")).toMatch(/^r[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]+$/)
    expect(field(simulated.stdout, "nonce")).toMatch(/^[A-Za-z0-9]{20}$/)
    expect(simulated.stdout).toContain("-----BEGIN PUBLIC KEY-----")
    expect(field(simulated.stdout, "ak.tpm2b").length).toBeGreaterThan(300)
  })

  it("verify-quote accepts the simulated quote (AK as binary file, and as base64 text) and prints the PCRs", async () => {
    const nonce = field(simulated.stdout, "nonce")
    const quote = field(simulated.stdout, "quote")
    const r = await attest(["tpm", "verify-quote", "--ak", join(dir, "ak.pub"), "--quote", quote, "--nonce", nonce])
    expect(r.stderr).toBe("")
    expect(r.code).toBe(0)
    expect(r.stdout).toContain("verdict: OK")
    expect(r.stdout).toMatch(/sha256:\n\s+0: 0{64}\n\s+10: 0{64}\n\s+16: 0{64}/)
    writeFileSync(join(dir, "ak.b64"), field(simulated.stdout, "ak.tpm2b"))
    writeFileSync(join(dir, "quote.txt"), quote)
    const fromText = await attest(["tpm", "verify-quote", "--ak", join(dir, "ak.b64"), "--quote", `@${join(dir, "quote.txt")}`, "--nonce", nonce])
    expect(fromText.code).toBe(0)
  }, 120_000)

  it("verify-quote exits non-zero and names the nonce check when the nonce differs", async () => {
    const quote = field(simulated.stdout, "quote")
    const r = await attest(["tpm", "verify-quote", "--ak", join(dir, "ak.pub"), "--quote", quote, "--nonce", "AAAAAAAAAAAAAAAAAAAA"])
    expect(r.code).not.toBe(0)
    expect(r.stderr).toContain("REJECTED (nonce)")
    expect(r.stdout).not.toContain("verdict: OK")
  }, 120_000)
})
