/**
 * Replay of an event log into PCR values per bank, and the boot_aggregate values IMA's first
 * entry must carry (tpm-facts.md §4.3: H(PCR0..7) and H(PCR0..9) for every bank, both accepted).
 */
import { cryptoPort } from "../crypto/active.js"
import { toHex as hexOf } from "../crypto/encoding.js"
import { digestOf } from "./hash.js"
import type { PcrValues } from "../tpm/Tpm.js"
import { digestSize, type HashAlg } from "../tpm/hashAlg.js"
import type { EventLog } from "./eventLog.js"
import { EV } from "./eventTypes.js"
import { toHex } from "./text.js"

/** The PCRs a UEFI log covers and attest checks: 0–9 (firmware, boot loader, grub) and 14 (shim's MOK lists). */
export const REPLAYED_PCRS: ReadonlyArray<number> = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 14]

/**
 * PCR values per bank (every bank of the Spec ID header attest can hash), PCRs 0–9 and 14.
 * EV_NO_ACTION events are not extended; a StartupLocality event sets PCR 0's last initial byte.
 */
export const replayPcrs = (log: EventLog): PcrValues => {
  const out: Array<{ hash: HashAlg; values: Map<number, Uint8Array> }> = []
  for (const a of log.algorithms) {
    if (a.alg === undefined) continue
    const alg = a.alg
    const size = digestSize(alg)
    const pcrs: Array<Uint8Array> = Array.from({ length: 24 }, () => new Uint8Array(size))
    pcrs[0]![size - 1] = log.startupLocality
    // PCR ‖ digest, hashed in one shot (no Hash object per extend).
    const extend = new Uint8Array(2 * size)
    const events = log.events
    // Event 0 of a crypto-agile log is the Spec ID header (EV_NO_ACTION); a legacy log's is measured.
    for (let i = 0; i < events.length; i++) {
      const e = events[i]!
      if (e.type === EV.NO_ACTION || e.pcr > 23) continue
      const ds = e.digests
      for (let j = 0; j < ds.length; j++) {
        const d = ds[j]!
        if (d.algId !== a.algId) continue
        extend.set(pcrs[e.pcr]!, 0)
        extend.set(d.digest, size)
        pcrs[e.pcr] = digestOf(alg, extend)
      }
    }
    const values = new Map<number, Uint8Array>()
    for (const p of REPLAYED_PCRS) values.set(p, new Uint8Array(pcrs[p]!))
    out.push({ hash: alg, values })
  }
  return out
}

/** Per bank: [H(PCR0‖…‖PCR7), H(PCR0‖…‖PCR9)] as lowercase hex, Keylime's `boot_aggregates` shape. */
export type BootAggregates = Partial<Record<HashAlg, ReadonlyArray<string>>>

export const bootAggregates = (replayed: PcrValues): BootAggregates => {
  const out: { [K in HashAlg]?: ReadonlyArray<string> } = {}
  for (const bank of replayed) {
    const list: Array<string> = []
    for (const max of [8, 10]) {
      const h = cryptoPort().hasher(bank.hash)
      let complete = true
      for (let p = 0; p < max; p++) {
        const v = bank.values.get(p)
        if (v === undefined) complete = false
        else h.update(v)
      }
      if (complete) list.push(hexOf(h.digest()))
    }
    out[bank.hash] = list
  }
  return out
}

/** Hex of one replayed PCR, for messages. */
export const pcrHex = (values: PcrValues, hash: HashAlg, pcr: number): string | undefined => {
  const v = values.find((b) => b.hash === hash)?.values.get(pcr)
  return v === undefined ? undefined : toHex(v)
}
