/**
 * A machine's IMA measurement list as a file the test grows the way the kernel does: the ima-ng
 * line is appended first, then PCR 10 of a swtpm is extended with its template hashes (sha1 and
 * sha256 banks), so a quote taken after `measure` replays against the file. The file and the
 * swtpm outlive the agent process: an agent restarted on them is a restart without a reboot.
 */
import { createHash } from "node:crypto"
import { appendFileSync, writeFileSync } from "node:fs"
import { encodeImaNg } from "../../src/ima/encode.js"
import type { Swtpm } from "../support/swtpm.js"

const sha256 = (content: string | Uint8Array) => new Uint8Array(createHash("sha256").update(content).digest())

export interface ImaFile {
  readonly path: string
  /** Entries written so far (boot_aggregate included). */
  readonly entries: () => number
  /** The file `path` with this content was measured: its line, then PCR 10. */
  readonly measure: (path: string, content: string | Uint8Array) => Promise<void>
}

/** A new list at `path` holding boot_aggregate, extended into the swtpm's PCR 10 (which must be fresh from startup). */
export const imaFile = async (swtpm: Swtpm, path: string): Promise<ImaFile> => {
  writeFileSync(path, "")
  let entries = 0
  const record = async (name: string, fileDigest: Uint8Array) => {
    const e = encodeImaNg(fileDigest, name, { banks: ["sha1", "sha256"] })
    appendFileSync(path, `${e.line}\n`)
    const digests = e.templateHashes.map((t) => `${t.hash}=${Buffer.from(t.digest).toString("hex")}`).join(",")
    await swtpm.tool("tpm2_pcrextend", [`10:${digests}`])
    entries++
  }
  // boot_aggregate over PCRs 0-9, all zero on a swtpm started without firmware (no boot log either)
  await record("boot_aggregate", sha256(new Uint8Array(32 * 10)))
  return { path, entries: () => entries, measure: (name, content) => record(name, sha256(content)) }
}
