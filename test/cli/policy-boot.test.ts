import { describe, expect, it } from "@effect/vitest"
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { withBootAppChanged } from "../boot/support.js"
import { spawnAttest } from "../support/spawnAttest.js"
import { vectorPath } from "../support/vectors.js"

const attest = async (...args: Array<string>) => {
  const r = await spawnAttest("policy", ...args)
  return { status: r.code, stdout: r.out, stderr: r.err }
}

const secureboot = vectorPath("keylime", "test", "data", "create-mb-policy", "binary_bios_measurements-secureboot")
const dir = mkdtempSync(join(tmpdir(), "attest-boot-cli-"))
// Created by the first test and reused: each CLI run costs seconds on the shared machine.
const refstate = join(dir, "refstate.json")

describe("attest policy create measured-boot / check-boot", async () => {
  it("creates a reference state from a vector log, and check-boot of that log exits 0", async () => {
    const created = await attest("create", "measured-boot", "--eventlog", secureboot, "--output", refstate)
    expect(created.status).toBe(0)
    const json = JSON.parse(readFileSync(refstate, "utf8")) as Record<string, unknown>
    expect(Object.keys(json).sort()).toEqual(["db", "dbx", "has_secureboot", "kek", "kernels", "mokdig", "mokxdig", "pk", "scrtm_and_bios", "vendor_db"])
    const checked = await attest("check-boot", "--refstate", refstate, "--eventlog", secureboot)
    expect(checked.stdout).toMatch(/^PASS /)
    expect(checked.status).toBe(0)
  })

  it("check-boot of a log with a changed boot application exits non-zero and prints the failure with its type and event", async () => {
    const changed = join(dir, "changed.bin")
    writeFileSync(changed, withBootAppChanged(new Uint8Array(readFileSync(secureboot)), 0))
    const r = await attest("check-boot", "--refstate", refstate, "--eventlog", changed)
    expect(r.status).not.toBe(0)
    expect(r.stdout).toMatch(/FAIL measured_boot\.policy_example: Boot attestation failed: .*bsas \[0\] event 29 \(PCR 4, EV_EFI_BOOT_SERVICES_APPLICATION\) does not match shim_authcode_sha256/)
    expect(r.stderr.trim().split("\n")).toHaveLength(1)
  })

  it("check-boot compares the log with a tpm2-tools PCR file and reports measured_boot.invalid_pcr_<n>", async () => {
    // quote3's PCRs are the GCE machine's, not this log's.
    const r = await attest("check-boot", "-r", refstate, "-e", secureboot, "--pcrs", vectorPath("tpm", "quotes", "quote3_ecc_sha256.pcrs"))
    expect(r.status).not.toBe(0)
    expect(r.stdout).toMatch(/FAIL measured_boot\.invalid_pcr_0: SHA256 boot event log PCR value does not match/)
  })

  it("create then check-boot passes a log with firmware events Keylime's example refuses (StartupLocality, EV_POST_CODE, EV_NONHOST_INFO, vendor variables)", async () => {
    const log = vectorPath("keylime", "test", "data", "create-mb-policy", "binary_bios_measurements")
    const own = join(dir, "own.json")
    const created = await attest("create", "measured-boot", "-e", log, "-i", "-o", own)
    expect(created.status).toBe(0)
    expect(created.stderr).toMatch(/warning: pinning 9 firmware event\(s\) the example policy has no rule for \(platform_events\)/)
    const checked = await attest("check-boot", "-r", own, "-e", log)
    expect(checked.stdout).toMatch(/^PASS /)
    expect(checked.status).toBe(0)
  })

  it("accepts base64 logs as the agent sends them, and fails clearly on a bogus log and on SecureBoot off without the flag", async () => {
    const b64 = vectorPath("keylime", "test", "data", "mb_log.b64")
    const mb = join(dir, "mb.json")
    expect((await attest("create", "measured-boot", "-e", b64, "-o", mb)).status).toBe(0)
    expect((await attest("check-boot", "-r", mb, "-e", b64)).status).toBe(0)
    const bogus = await attest("check-boot", "-r", mb, "-e", vectorPath("keylime", "test", "data", "create-mb-policy", "binary_bios_measurements-bogus"))
    expect(bogus.status).not.toBe(0)
    expect(bogus.stderr).toMatch(/^attest policy check-boot: .* is not a usable UEFI event log: event 0, /)
    const off = await attest("create", "measured-boot", "-e", vectorPath("keylime", "test", "data", "create-mb-policy", "binary_bios_measurements"))
    expect(off.status).not.toBe(0)
    expect(off.stderr.trim()).toBe("attest policy create measured-boot: the event log has SecureBoot disabled, but --without-secureboot was not set")
  })
})
