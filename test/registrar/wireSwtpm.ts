/**
 * The swtpm of the Keylime capture (`vectors/keylime-wire/inputs/swtpm`), restarted from its saved
 * state, with the registered AK loaded under its EK: activates the blobs attest's registrar hands
 * out for that AK, as the README of the vectors describes.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process"
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { freePortPair } from "../support/swtpm.js"
import { vectorPath } from "../support/vectors.js"

export interface WireTpm {
  /** ActivateCredential of a tpm2-tools credential file with the AK `ak.pub`; returns the secret. */
  readonly activate: (blob: Uint8Array) => Promise<Uint8Array>
  readonly stop: () => Promise<void>
}

const waitForPort = async (port: number): Promise<void> => {
  const net = await import("node:net")
  for (let i = 0; i < 200; i++) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect({ host: "127.0.0.1", port })
      s.once("connect", () => {
        s.destroy()
        resolve(true)
      })
      s.once("error", () => resolve(false))
    })
    if (ok) return
    await new Promise((r) => setTimeout(r, 25))
  }
  throw new Error(`swtpm did not listen on ${port}`)
}

export const startWireTpm = async (): Promise<WireTpm> => {
  const dir = mkdtempSync(join(tmpdir(), "attest-wire-swtpm-"))
  cpSync(vectorPath("keylime-wire", "inputs", "swtpm"), dir, { recursive: true })
  const port = await freePortPair()
  const child: ChildProcess = spawn("swtpm", [
    "socket",
    "--tpm2",
    "--tpmstate",
    `dir=${join(dir, "state")}`,
    "--server",
    `type=tcp,port=${port},bindaddr=127.0.0.1`,
    "--ctrl",
    `type=tcp,port=${port + 1},bindaddr=127.0.0.1`,
    "--flags",
    "not-need-init,startup-clear"
  ], { stdio: "ignore" })
  const tool = (name: string, args: ReadonlyArray<string>) =>
    new Promise<void>((resolve, reject) =>
      execFile(name, [...args], { cwd: dir, env: { ...process.env, TPM2TOOLS_TCTI: `swtpm:host=127.0.0.1,port=${port}` }, timeout: 30_000 }, (e, _o, err) =>
        e ? reject(new Error(`${name} ${args.join(" ")}: ${err || e.message}`)) : resolve()
      )
    )
  const stop = async () => {
    if (child.exitCode === null) {
      const exited = new Promise((r) => child.once("exit", r))
      child.kill("SIGTERM")
      await Promise.race([exited, new Promise((r) => setTimeout(r, 2000))])
    }
    rmSync(dir, { recursive: true, force: true })
  }
  try {
    await waitForPort(port)
    await tool("tpm2_createek", ["-c", "ek.ctx", "-G", "rsa", "-u", "ek.created.pub"])
    await tool("tpm2_flushcontext", ["-t"])
    await tool("tpm2_startauthsession", ["--policy-session", "-S", "s.ctx"])
    await tool("tpm2_policysecret", ["-S", "s.ctx", "-c", "e"])
    await tool("tpm2_load", ["-C", "ek.ctx", "-P", "session:s.ctx", "-u", "ak.pub", "-r", "ak.priv", "-c", "ak.ctx"])
    await tool("tpm2_flushcontext", ["s.ctx"])
    await tool("tpm2_flushcontext", ["-t"])
  } catch (e) {
    await stop()
    throw e
  }
  let queue: Promise<unknown> = Promise.resolve()
  const activate = (blob: Uint8Array): Promise<Uint8Array> => {
    const run = async () => {
      writeFileSync(join(dir, "blob.bin"), blob)
      await tool("tpm2_flushcontext", ["-t"])
      await tool("tpm2_startauthsession", ["--policy-session", "-S", "s.ctx"])
      await tool("tpm2_policysecret", ["-S", "s.ctx", "-c", "e"])
      await tool("tpm2_activatecredential", ["-c", "ak.ctx", "-C", "ek.ctx", "-i", "blob.bin", "-o", "secret.bin", "-P", "session:s.ctx"])
      await tool("tpm2_flushcontext", ["s.ctx"])
      // tpm2-tools leave loaded contexts behind and swtpm has three transient slots
      await tool("tpm2_flushcontext", ["-t"])
      return new Uint8Array(readFileSync(join(dir, "secret.bin")))
    }
    const next = queue.then(run, run)
    queue = next.catch(() => undefined)
    return next
  }
  return { activate, stop }
}
