/**
 * `attest ear verify`: exit 0 and the claims for an affirming token checked with the JWKS or the
 * PEM key, 1 for a contraindicated token or one that does not verify, 2 for a usage error.
 */
import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { generateEarKey, jwksDocument, signEar } from "../../src/ear/index.js"
import { spawnAttest, spawnAttestWith } from "../support/spawnAttest.js"

const dir = mkdtempSync(join(tmpdir(), "attest-ear-cli-"))
const key = generateEarKey()
const jwks = join(dir, "jwks.json")
writeFileSync(jwks, JSON.stringify(jwksDocument([key])))
const pem = join(dir, "ear-signing-key.pem")
writeFileSync(pem, key.privateKey.export({ format: "pem", type: "pkcs8" }).toString())
const options = { verifierId: "verifier-1", build: "attest 0.1.0" }
const affirming = Either.getOrThrow(signEar({ agentId: "agent-1", failures: [], appraised: { quote: true, ima: true } }, key, options, 1_700_000_000))
const contraindicated = Either.getOrThrow(
  signEar({ agentId: "agent-1", failures: [{ type: "ima.validation.ima-ng.not_in_allowlist", context: { message: "File not found in allowlist: /usr/bin/evil" } }], appraised: { quote: true, ima: true } }, key, options, 1_700_000_000)
)

describe("attest ear verify", () => {
  it("exits 0 for an affirming token checked with the JWKS, printing status, vector and verifier", async () => {
    const r = await spawnAttest("ear", "verify", affirming, "--jwks", jwks)
    expect(r.out.split("\n").slice(0, 5)).toEqual([
      `status: affirming (signature verified with key ${key.kid})`,
      "verifier: attest 0.1.0 (attest), verifier-1",
      "issued: 2023-11-14T22:13:20.000Z",
      "agent: agent-1",
      "tpm: affirming"
    ])
    expect(r.out).toContain("  executables: 2\n")
    expect(r.code).toBe(0)
  }, 60_000)

  it("reads the token from standard input with -, the options after it (the README's form)", async () => {
    const r = await spawnAttestWith({ input: `${affirming}\n` }, "ear", "verify", "-", "--jwks", jwks)
    expect([r.code, r.out.split("\n")[0], r.err]).toEqual([0, `status: affirming (signature verified with key ${key.kid})`, ""])
  }, 60_000)

  it("exits 1 for a contraindicated token (checked with the PEM key), listing its failures", async () => {
    const r = await spawnAttest("ear", "verify", contraindicated, "--key", pem)
    expect(r.out).toContain("tpm: contraindicated\n")
    expect(r.out).toContain("  FAIL ima.validation.ima-ng.not_in_allowlist: File not found in allowlist: /usr/bin/evil\n")
    expect(r.code).toBe(1)
  }, 60_000)

  it("exits 1 for a token whose signature does not verify, saying so in one line", async () => {
    const parts = affirming.split(".")
    const forged = `${parts[0]}.${Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(parts[1]!, "base64url").toString()), sub: "agent-2" })).toString("base64url")}.${parts[2]}`
    const r = await spawnAttest("ear", "verify", forged, "--jwks", jwks)
    expect(r.err.trim()).toBe("attest ear verify: the token does not verify: the signature does not verify with the key")
    expect(r.code).toBe(1)
  }, 60_000)

  it("exits 2 without a key, or with both --jwks and --key", async () => {
    expect((await spawnAttest("ear", "verify", affirming)).code).toBe(2)
    const both = await spawnAttest("ear", "verify", affirming, "--jwks", jwks, "--key", pem)
    expect(both.err).toContain("exactly one of --jwks and --key")
    expect(both.code).toBe(2)
  }, 60_000)
})
