/**
 * The swtpm of the Keylime capture (`vectors/keylime-wire/inputs/swtpm`), restarted from its saved
 * state, with the registered AK loaded under its EK: activates the blobs attest's registrar hands
 * out for that AK, as the README of the vectors describes.
 */
import { cpSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { startSwtpm } from "../support/swtpm.js"
import { vectorPath } from "../support/vectors.js"

export interface WireTpm {
  /** ActivateCredential of a tpm2-tools credential file with the AK `ak.pub`; returns the secret. */
  readonly activate: (blob: Uint8Array) => Promise<Uint8Array>
  readonly stop: () => Promise<void>
}

export const startWireTpm = async (): Promise<WireTpm> => {
  const recorded = vectorPath("keylime-wire", "inputs", "swtpm")
  const swtpm = await startSwtpm({ fromState: join(recorded, "state") })
  const dir = swtpm.stateDir
  const tool = (name: string, args: ReadonlyArray<string>) => swtpm.tool(name, args, dir)
  try {
    for (const f of ["ak.pub", "ak.priv"]) cpSync(join(recorded, f), join(dir, f))
    await tool("tpm2_createek", ["-c", "ek.ctx", "-G", "rsa", "-u", "ek.created.pub"])
    await tool("tpm2_flushcontext", ["-t"])
    await tool("tpm2_startauthsession", ["--policy-session", "-S", "s.ctx"])
    await tool("tpm2_policysecret", ["-S", "s.ctx", "-c", "e"])
    await tool("tpm2_load", ["-C", "ek.ctx", "-P", "session:s.ctx", "-u", "ak.pub", "-r", "ak.priv", "-c", "ak.ctx"])
    await tool("tpm2_flushcontext", ["s.ctx"])
    await tool("tpm2_flushcontext", ["-t"])
  } catch (e) {
    await swtpm.stop()
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
  return { activate, stop: swtpm.stop }
}
