/**
 * `attest tpm simulator-ca` exports the manufacturer CA of the simulated TPMs (issue 8, item 14):
 * the PEM printed or written is the CA that a simulated TPM's EK certificate chains to.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import * as crypto from "node:crypto"
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { TpmSimulator } from "../../src/tpm/simulator/TpmSimulator.js"
import { Tpm } from "../../src/tpm/Tpm.js"
import { runAttest as attest } from "../support/cli.js"

/** The EK certificate of a fresh simulated TPM, checked against a CA certificate in PEM. */
const ekChainsTo = (caPem: string) =>
  Effect.gen(function*() {
    const tpm = yield* Tpm
    const ek = new crypto.X509Certificate(Option.getOrThrow(yield* tpm.ekCertificate("rsa")))
    const ca = new crypto.X509Certificate(caPem)
    return ek.checkIssued(ca) && ek.verify(ca.publicKey) && ca.ca
  }).pipe(Effect.provide(TpmSimulator.layer({ seed: "simulator-ca-cli" })), Effect.orDie)

describe("attest tpm simulator-ca", () => {
  it.live("prints the PEM of the CA that simulated EK certificates chain to", () =>
    Effect.gen(function*() {
      const r = yield* attest("tpm", "simulator-ca")
      expect(r.ok).toBe(true)
      expect(r.stdout).toMatch(/^-----BEGIN CERTIFICATE-----\n[\s\S]+\n-----END CERTIFICATE-----\n$/)
      expect(yield* ekChainsTo(r.stdout)).toBe(true)
    }))

  it.live("writes it to --out (0644) and says where", () =>
    Effect.gen(function*() {
      const dir = mkdtempSync(join(tmpdir(), "attest-cli-simca-"))
      const file = join(dir, "simulator-ca.pem")
      const r = yield* attest("tpm", "simulator-ca", "--out", file)
      expect(r.ok).toBe(true)
      expect(r.stdout).toBe(`wrote the simulated TPM manufacturer CA to ${file}\n`)
      expect(statSync(file).mode & 0o777).toBe(0o644)
      expect(yield* ekChainsTo(readFileSync(file, "utf8"))).toBe(true)
      rmSync(dir, { recursive: true, force: true })
    }))
})
