/** Shared helpers for the boot tests: the vector logs and a consistent log mutation. */
import { createHash } from "node:crypto"
import { Either } from "effect"
import { parseEventLog, type EventLog } from "../../src/boot/eventLog.js"
import { EV } from "../../src/boot/eventTypes.js"
import { readVector, readVectorText } from "../support/vectors.js"

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
