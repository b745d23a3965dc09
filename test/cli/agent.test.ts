/**
 * `attest agent` says what is simulated, and only that (issue 8, item 11): with --tpm tpm2-tools it
 * never claims the TPM is simulated (with simulated measurements it says the measurements are);
 * with --tpm simulator it says the TPM is.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { initCa } from "../../src/pki/ca.js"
import { startAttest } from "../support/attestProcess.js"
import { needsSwtpm } from "../support/requirements.js"
import { freePort } from "../support/swtpm.js"

const swtpmOk = needsSwtpm()

const agentConfig = (dir: string, ports: { readonly agent: number; readonly registrar: number }) => {
  Effect.runSync(Effect.orDie(initCa({ dir: join(dir, "ca") })))
  const file = join(dir, "attest.toml")
  writeFileSync(file, [
    "[agent]",
    `data_dir = "${join(dir, "agent")}"`,
    `trusted_client_ca = ["${join(dir, "ca", "cacert.crt")}"]`,
    `port = ${ports.agent}`,
    `registrar_port = ${ports.registrar}`,
    ""
  ].join("\n"))
  return file
}

describe("attest agent start-up warnings", () => {
  it.live("with --tpm simulator says the TPM is simulated", () =>
    Effect.promise(async () => {
      const dir = mkdtempSync(join(tmpdir(), "attest-cli-agent-"))
      const run = startAttest(["agent", "--config", agentConfig(dir, { agent: await freePort(), registrar: await freePort() }), "--tpm", "simulator"])
      try {
        await run.waitFor(/The TPM is SIMULATED/, 60_000)
        expect(run.output()).toContain("and the measurements come from a simulated machine")
      } finally {
        await run.stop()
        rmSync(dir, { recursive: true, force: true })
      }
    }), 90_000)

  it.live.skipIf(!swtpmOk)("with --tpm tpm2-tools never says the TPM is simulated, and names simulated measurements", () =>
    Effect.promise(async () => {
      const dir = mkdtempSync(join(tmpdir(), "attest-cli-agent-"))
      const closed = await freePort() // no TPM listens there: the agent stops after its warnings
      const run = startAttest([
        "agent", "--config", agentConfig(dir, { agent: await freePort(), registrar: await freePort() }),
        "--tpm", "tpm2-tools", "--tcti", `swtpm:host=127.0.0.1,port=${closed}`, "--measurements", "simulated"
      ])
      try {
        const code = await run.exited
        expect(code).not.toBe(0)
        expect(run.output()).toContain("The measurements (IMA list, boot log) come from a SIMULATED machine")
        expect(run.output()).not.toMatch(/TPM is SIMULATED/)
      } finally {
        await run.stop()
        rmSync(dir, { recursive: true, force: true })
      }
    }), 90_000)
})
