import { describe, expect, it } from "@effect/vitest"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect } from "effect"
import { runAttest } from "../support/cli.js"
import { spawnAttest } from "../support/spawnAttest.js"
import { vectorPath } from "../support/vectors.js"
import { milanReport, teeKey } from "../tee/support.js"

const report = vectorPath("snp", "report_milan.hex")
const vcek = vectorPath("snp", "vcek_milan.der")
const dir = mkdtempSync(join(tmpdir(), "attest-tee-cli-"))

describe("attest tee verify-snp", () => {
  it("exits 0 for the real Milan report and its VCEK, printing the verdict and the claims", async () => {
    const r = await spawnAttest("tee", "verify-snp", "--report", report, "--vcek", vcek)
    expect(r.out.split("\n")[0]).toBe("verdict: VALID (VCEK chain to AMD's Milan roots, TCB, chip id, signature verified; freshness not checked (no --nonce))")
    expect(r.out).toMatch(/\n {2}reported_tcb_microcode: 115\n/)
    expect(r.out).toMatch(/\n {2}chip_id: d49554ec717f4e5b/)
    expect(r.code).toBe(0)
  })

  it("exits 1 for a report with one flipped bit, one line per failure with its type", async () => {
    const flipped = milanReport()
    flipped[21]! ^= 0x80
    const file = join(dir, "flipped.bin")
    writeFileSync(file, flipped)
    const r = await spawnAttest("tee", "verify-snp", "--report", file, "--vcek", vcek)
    expect(r.out.trim().split("\n")).toEqual(["verdict: INVALID", "FAIL tee_attestation.invalid_signature: SEV-SNP report signature: the VCEK's key does not verify the report's signature"])
    expect(r.err.trim().split("\n")).toHaveLength(1)
    expect(r.code).toBe(1)
  })

  it("exits 2 for a usage error: a missing --vcek, or --nonce without the TEE key", async () => {
    const missing = await spawnAttest("tee", "verify-snp", "--report", report)
    expect(missing.code).toBe(2)
    const partial = await spawnAttest("tee", "verify-snp", "--report", report, "--vcek", vcek, "--nonce", "AAAA")
    expect(partial.err).toMatch(/--nonce, --pubkey-x and --pubkey-y go together/)
    expect(partial.code).toBe(2)
  })

  // Live clock: certificate validity is judged at the real time.
  it.live("prints the verdict as JSON with --json, and checks freshness when given the nonce and TEE key", () =>
    Effect.gen(function*() {
      const { x, y } = teeKey()
      const r = yield* runAttest("tee", "verify-snp", "--report", report, "--vcek", vcek, "--nonce", "bm9uY2U=", "--pubkey-x", x, "--pubkey-y", y, "--json")
      expect(r.ok).toBe(false)
      const verdict = JSON.parse(r.stdout) as { valid: boolean; failures: Array<{ type: string }> }
      expect([verdict.valid, verdict.failures.map((f) => f.type)]).toEqual([false, ["tee_attestation.freshness_hash_failed"]])
    })
  )

  it.live("--json gives every byte field as hex, as the text output does", () =>
    Effect.gen(function*() {
      const r = yield* runAttest("tee", "verify-snp", "--report", report, "--vcek", vcek, "--json")
      const verdict = JSON.parse(r.stdout) as { valid: boolean; claims: Record<string, unknown> }
      expect([verdict.valid, String(verdict.claims["chip_id"]).slice(0, 16), typeof verdict.claims["measurement"]]).toEqual([true, "d49554ec717f4e5b", "string"])
      expect(Object.entries(verdict.claims).filter(([, v]) => Array.isArray(v))).toEqual([])
    }))

  it.effect("a file that is not a report says its own size, once", () =>
    Effect.gen(function*() {
      const junk = join(dir, "junk.bin")
      writeFileSync(junk, Buffer.alloc(938, 0xab))
      const r = yield* runAttest("tee", "verify-snp", "--report", junk, "--vcek", vcek)
      expect(r.stderr.split("\n")[0]).toEqual(
        `attest tee verify-snp: --report ${junk}: 938 bytes, neither a report nor its text; a report is 1184 bytes (0x4A0), binary or as hex or base64 text`
      )
      const short = join(dir, "short.b64")
      writeFileSync(short, Buffer.alloc(571, 1).toString("base64"))
      const s = yield* runAttest("tee", "verify-snp", "--report", short, "--vcek", vcek)
      expect(s.stderr.split("\n")[0]).toEqual(`attest tee verify-snp: --report ${short}: base64 text of 571 bytes; a report is 1184 bytes (0x4A0), binary or as hex or base64 text`)
    }))
})
