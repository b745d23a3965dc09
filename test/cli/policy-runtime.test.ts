import { describe, expect, it } from "@effect/vitest"
import * as crypto from "node:crypto"
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll } from "vitest"
import { makeLine } from "../ima/helpers.js"
import { spawnAttest } from "../support/spawnAttest.js"
import { vectorPath } from "../support/vectors.js"

const attest = (...args: Array<string>) => spawnAttest("policy", ...args)

const dir = mkdtempSync(join(tmpdir(), "attest-policy-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const root = join(dir, "root")
const files: Record<string, string> = { "usr/bin/tool": "#!/bin/sh\necho tool\n", "usr/lib/libx.so": "ELF…", "etc/app.conf": "k=v\n", "proc/1/status": "pseudo" }
for (const [p, c] of Object.entries(files)) {
  mkdirSync(join(root, p, ".."), { recursive: true })
  writeFileSync(join(root, p), c)
}
const imaLine = (path: string, content: string) =>
  makeLine("ima-ng", `sha256:${crypto.createHash("sha256").update(content).digest("hex")}`, path)
const listOf = (contents: Record<string, string>) =>
  Object.entries(contents).map(([p, c]) => imaLine("/" + p, c)).join("\n") + "\n"

describe("attest policy (runtime)", () => {
  const policy = join(dir, "policy.json")

  it("creates a policy from a directory tree that passes an IMA list of those files", async () => {
    const created = await attest("create", "runtime", "--rootfs", root, "--output", policy)
    expect(created.code, created.err).toBe(0)
    const json = JSON.parse(readFileSync(policy, "utf8"))
    expect(Object.keys(json.digests).sort()).toEqual(["/etc/app.conf", "/usr/bin/tool", "/usr/lib/libx.so"])
    expect(json.excludes).toContain("/proc/.*")
    writeFileSync(join(dir, "good.list"), listOf(files))
    const ok = await attest("check", "--policy", policy, "--ima-list", join(dir, "good.list"))
    expect(ok.code, ok.out + ok.err).toBe(0)
    expect(ok.out).toContain("PASS: 4 entries")
  })

  it("fails a changed file with the type string, the entry and the path, and a non-zero exit", async () => {
    writeFileSync(join(dir, "bad.list"), listOf({ ...files, "usr/bin/tool": "#!/bin/sh\necho evil\n" }))
    const bad = await attest("check", "--policy", policy, "--ima-list", join(dir, "bad.list"))
    expect(bad.code).not.toBe(0)
    expect(bad.out).toContain("ima.validation.ima-ng.runtime_policy_hash")
    expect(bad.out).toContain("entry 1 /usr/bin/tool")
    expect(bad.err).toContain("1 failure(s)")
  })

  it("checks the quoted PCR 10 and passes the Keylime pass policy only", async () => {
    const q = (...p: Array<string>) => vectorPath("keylime", "generated", "swtpm-quote-1", ...p)
    const pcr = "7e99dba391d6bebd924a5be9a87f76707ff3908b2ed5ae9939ede823d2872f80"
    expect((await attest("check", "--policy", q("runtime-policy-pass.json"), "--ima-list", q("ima-log.txt"), "--pcr10", pcr)).code).toBe(0)
    const wrong = await attest("check", "--policy", q("runtime-policy-pass.json"), "--ima-list", q("ima-log.txt"), "--pcr10", "11".repeat(32))
    expect(wrong.code).not.toBe(0)
    expect(wrong.out).toContain("ima.pcr_mismatch")
  })

  it("signs a created policy and verifies it; a tampered envelope or another key fails", async () => {
    const key = vectorPath("keylime", "test", "data", "sign-runtime-policy", "ec-p521-private.pem")
    const pub = vectorPath("keylime", "test", "data", "sign-runtime-policy", "ec-p521-public.pem")
    const signed = join(dir, "signed.json")
    const s = await attest("sign", "--policy", policy, "--key", key, "--output", signed)
    expect(s.code, s.err).toBe(0)
    expect((await attest("verify", "--policy", signed, "--key", pub)).out).toContain("OK:")
    const other = await attest("verify", "--policy", signed, "--key", vectorPath("keylime", "test", "data", "runtime-policy-pubkey.pub"))
    expect(other.code).not.toBe(0)
    expect(other.err.trim().split("\n")).toHaveLength(1)
    const bad = await attest("verify", "--policy", vectorPath("keylime", "test", "data", "runtime-policy-test-signed-bad.json"), "--key", vectorPath("keylime", "test", "data", "runtime-policy-pubkey.pub"))
    expect(bad.code).not.toBe(0)
  })

  it("reports a missing file or bad JSON in one line without a stack trace", async () => {
    const missing = await attest("check", "--policy", join(dir, "nope.json"), "--ima-list", join(dir, "good.list"))
    expect(missing.code).toBe(2)
    expect(missing.err.trim()).toMatch(/^attest policy check: '.*nope\.json' does not exist \('attest policy check --help' lists its options\)$/)
    writeFileSync(join(dir, "broken.json"), "{ not json")
    const broken = await attest("check", "--policy", join(dir, "broken.json"), "--ima-list", join(dir, "good.list"))
    expect(broken.code).not.toBe(0)
    expect(broken.err.trim().split("\n")).toHaveLength(1)
    expect(broken.err).toContain("not valid JSON")
  })
})
