/**
 * Writes a crypto-agile event log: the Spec ID header, then TCG_PCR_EVENT2 records. Used by tests
 * (round trips, tampered logs) and by anything that must produce a log for a simulated machine.
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
