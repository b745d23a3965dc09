/**
 * Writes event logs: crypto-agile (the Spec ID header, then TCG_PCR_EVENT2 records) and legacy SHA-1
 * (TCG_PCR_EVENT records). Used by tests (round trips, tampered logs) and by anything that must
 * produce a log for a simulated machine.
 */
import { Writer } from "../tpm/bytes.js"
import { algIdOf, digestSize, type HashAlg } from "../tpm/hashAlg.js"
import { EV } from "./eventTypes.js"

export interface EventToEncode {
  readonly pcr: number
  readonly type: number
  /** One digest per bank, in the order of `banks`. */
  readonly digests: ReadonlyArray<Uint8Array>
  readonly data: Uint8Array
}

export const encodeEventLog = (banks: ReadonlyArray<HashAlg>, events: ReadonlyArray<EventToEncode>): Uint8Array => {
  // Sized up front so the writer never has to grow and copy.
  const perEvent = 16 + banks.reduce((n, b) => n + 2 + digestSize(b), 0)
  const total = 32 + 33 + 4 * banks.length + events.reduce((n, e) => n + perEvent + e.data.length, 0)
  const w = new Writer(total + 16)
  const spec = new Writer(64 + 4 * banks.length)
  spec.bytes(new TextEncoder().encode("Spec ID Event03\0")).u32le(0).u8(0).u8(2).u8(0).u8(2).u32le(banks.length)
  for (const b of banks) spec.u16le(algIdOf(b)).u16le(digestSize(b))
  spec.u8(0)
  const body = spec.finish()
  w.u32le(0).u32le(EV.NO_ACTION).bytes(new Uint8Array(20)).u32le(body.length).bytes(body)
  for (const e of events) {
    w.u32le(e.pcr).u32le(e.type).u32le(banks.length)
    banks.forEach((b, i) => w.u16le(algIdOf(b)).bytes(e.digests[i]!))
    w.u32le(e.data.length).bytes(e.data)
  }
  return w.finish()
}

export interface LegacyEventToEncode {
  readonly pcr: number
  readonly type: number
  /** The SHA-1 digest (20 bytes). */
  readonly digest: Uint8Array
  readonly data: Uint8Array
}

/**
 * Writes a legacy SHA-1 event log (TCG_PCR_EVENT records only), as firmware without crypto-agile
 * support does. `specIdHeader` starts it with the EFI 1.2 `Spec ID Event02` EV_NO_ACTION record
 * some of that firmware writes (not measured).
 */
export const encodeLegacyEventLog = (events: ReadonlyArray<LegacyEventToEncode>, options: { readonly specIdHeader?: boolean } = {}): Uint8Array => {
  const w = new Writer(64 + events.reduce((n, e) => n + 32 + e.data.length, 0))
  if (options.specIdHeader) {
    const body = new Writer(32).bytes(new TextEncoder().encode("Spec ID Event02\0")).u32le(0).u8(2).u8(1).u8(0).u8(2).u8(0).finish()
    w.u32le(0).u32le(EV.NO_ACTION).bytes(new Uint8Array(20)).u32le(body.length).bytes(body)
  }
  for (const e of events) w.u32le(e.pcr).u32le(e.type).bytes(e.digest).u32le(e.data.length).bytes(e.data)
  return w.finish()
}
