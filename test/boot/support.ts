/** Shared helpers for the boot tests: the vector logs and a consistent log mutation. */
import { createHash } from "node:crypto"
import { readdirSync, readFileSync } from "node:fs"
import { join, relative } from "node:path"
import { Either } from "effect"
import { parseEventLog, parseEventLogInput, type EventLog } from "../../src/boot/eventLog.js"
import { EV } from "../../src/boot/eventTypes.js"
import { readVector, readVectorText, vectorsDir } from "../support/vectors.js"

export const gceLog = () => readVector("tpm", "eventlog", "event-gce-ubuntu-2104-log.bin")
export const keylimeLog = (suffix = "") => readVector("keylime", "test", "data", "create-mb-policy", `binary_bios_measurements${suffix}`)
export const secureBootLog = () => keylimeLog("-secureboot")
export const mbLogB64 = () => readVectorText("keylime", "test", "data", "mb_log.b64")
export const rustUefiLog = () => readVector("rust-keylime", "keylime", "test-data", "uefi_log.bin")

export const parsed = (bytes: Uint8Array): EventLog => Either.getOrThrowWith(parseEventLog(bytes), (e) => new Error(e.message))

/**
 * A copy of `bytes` where the `nth` EV_EFI_BOOT_SERVICES_APPLICATION event measures a different
 * image: every bank's digest is replaced by H_bank("tampered"), so the log stays self-consistent
 * and its replay changes PCR 4 the way a TPM would.
 */
export const withBootAppChanged = (bytes: Uint8Array, nth: number): Uint8Array => {
  const log = parsed(bytes)
  const apps = log.events.filter((e) => e.type === EV.EFI_BOOT_SERVICES_APPLICATION)
  const target = apps[nth]
  if (target === undefined) throw new Error(`no boot application #${nth}`)
  const out = new Uint8Array(bytes)
  let at = target.offset + 12
  for (const d of target.digests) {
    at += 2
    if (d.alg !== undefined) out.set(createHash(d.alg).update("tampered").digest(), at)
    at += d.digest.length
  }
  return out
}

/** The `pcrs:` section of tpm2_eventlog YAML output: bank -> pcr -> hex. */
export const yamlPcrs = (yaml: string): Map<string, Map<number, string>> => {
  const out = new Map<string, Map<number, string>>()
  const section = yaml.slice(yaml.indexOf("\npcrs:"))
  let bank: Map<number, string> | undefined
  for (const line of section.split("\n")) {
    const b = /^ {2}(\w+):\s*$/.exec(line)
    if (b) out.set(b[1]!, (bank = new Map()))
    const p = /^ {4}(\d+)\s*:\s*0x([0-9a-fA-F]+)/.exec(line)
    if (p && bank) bank.set(Number(p[1]), p[2]!.toLowerCase())
  }
  return out
}

/**
 * Every UEFI event log in ../shared/vectors: each file that parses (binary or base64) as a
 * crypto-agile log with measured events, found by walking the folder so new vectors are covered.
 */
export const vectorEventLogs = (): ReadonlyArray<{ readonly name: string; readonly bytes: Uint8Array }> => {
  const out: Array<{ name: string; bytes: Uint8Array }> = []
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const path = join(dir, entry.name)
      if (entry.isDirectory()) walk(path)
      else if (entry.isFile()) {
        const raw = new Uint8Array(readFileSync(path))
        const log = parseEventLogInput(raw)
        if (Either.isLeft(log) || log.right.format !== "tcg2" || log.right.events.length <= 1) continue
        // Base64 text as the agent sends it (mb_log.b64) becomes the binary log.
        const bytes = Either.isRight(parseEventLog(raw)) ? raw : new Uint8Array(Buffer.from(new TextDecoder().decode(raw).replace(/\s+/g, ""), "base64"))
        out.push({ name: relative(vectorsDir, path), bytes })
      }
    }
  }
  walk(vectorsDir)
  return out
}

/** A copy of a log with new digests for event `index` (every bank: H_bank(data)), so the log stays self-consistent. */
export const withDigestsOf = (bytes: Uint8Array, index: number, data: Uint8Array): Uint8Array => {
  const e = parsed(bytes).events[index]!
  const out = new Uint8Array(bytes)
  let at = e.offset + 12
  for (const d of e.digests) {
    at += 2
    if (d.alg !== undefined) out.set(createHash(d.alg).update(data).digest(), at)
    at += d.digest.length
  }
  return out
}

/** The keys of a signature-list variable event: log offset and length of each SignatureData, and its owner and data as hex. */
export const signatureKeys = (bytes: Uint8Array, index: number): ReadonlyArray<{ readonly at: number; readonly length: number; readonly id: string }> => {
  const e = parsed(bytes).events[index]!
  if (e.decoded.kind !== "variable") return []
  const v = e.decoded.variableData
  // The parse shares the buffer of `bytes`: the variable data's position in it is its log offset.
  const base = v.byteOffset - bytes.byteOffset
  const view = new DataView(v.buffer, v.byteOffset, v.byteLength)
  const out: Array<{ at: number; length: number; id: string }> = []
  for (let at = 0; at + 28 <= v.length;) {
    const listSize = view.getUint32(at + 16, true)
    const headerSize = view.getUint32(at + 20, true)
    const sigSize = view.getUint32(at + 24, true)
    for (let k = at + 28 + headerSize; k + sigSize <= at + listSize; k += sigSize) {
      out.push({ at: base + k + 16, length: sigSize - 16, id: Buffer.from(v.subarray(k, k + sigSize)).toString("hex") })
    }
    at += listSize
  }
  return out
}
