/** The TPM key derivation functions (TPM 2.0 Part 1 §11.4.10). */
import { cryptoPort } from "../crypto/active.js"
import { concat } from "../crypto/encoding.js"
import type { HashAlg } from "./hashAlg.js"

const encoder = new TextEncoder()

/** Label bytes with exactly one trailing NUL (the TPM includes it; callers may pass it or not). */
const labelBytes = (label: string | Uint8Array): Uint8Array => {
  const b = typeof label === "string" ? encoder.encode(label) : label
  if (b.length > 0 && b[b.length - 1] === 0) return b
  const out = new Uint8Array(b.length + 1)
  out.set(b)
  return out
}

const u32 = (v: number): Uint8Array => Uint8Array.of((v >>> 24) & 0xff, (v >>> 16) & 0xff, (v >>> 8) & 0xff, v & 0xff)

/** Trims to `bits`, clearing the unused high bits of the first byte as the spec requires. */
const truncate = (out: Uint8Array, bits: number): Uint8Array => {
  const bytes = (bits + 7) >>> 3
  const r = out.slice(0, bytes)
  if (bits % 8 !== 0) r[0] = r[0]! & ((1 << (bits % 8)) - 1)
  return r
}

/**
 * KDFa: SP 800-108 counter mode with HMAC.
 * K(i) = HMAC_hash(key, [i]32 ‖ label ‖ 0x00 ‖ contextU ‖ contextV ‖ [bits]32).
 */
export const kdfa = (
  hash: HashAlg,
  key: Uint8Array,
  label: string | Uint8Array,
  contextU: Uint8Array,
  contextV: Uint8Array,
  bits: number
): Uint8Array => {
  const l = labelBytes(label)
  const bitsBytes = u32(bits)
  const bytes = (bits + 7) >>> 3
  const chunks: Array<Uint8Array> = []
  let have = 0
  for (let i = 1; have < bytes; i++) {
    const h = cryptoPort().hmac(hash, key, u32(i), l, contextU, contextV, bitsBytes)
    chunks.push(h)
    have += h.length
  }
  return truncate(concat(...chunks), bits)
}

/**
 * KDFe: SP 800-56A concatenation KDF.
 * K(i) = H([i]32 ‖ Z ‖ label ‖ 0x00 ‖ partyUInfo ‖ partyVInfo).
 */
export const kdfe = (
  hash: HashAlg,
  z: Uint8Array,
  label: string | Uint8Array,
  partyU: Uint8Array,
  partyV: Uint8Array,
  bits: number
): Uint8Array => {
  const l = labelBytes(label)
  const bytes = (bits + 7) >>> 3
  const chunks: Array<Uint8Array> = []
  let have = 0
  for (let i = 1; have < bytes; i++) {
    const h = cryptoPort().hasher(hash).update(u32(i)).update(z).update(l).update(partyU).update(partyV).digest()
    chunks.push(h)
    have += h.length
  }
  return truncate(concat(...chunks), bits)
}
