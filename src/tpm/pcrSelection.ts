/** TPML_PCR_SELECTION (Part 2 §10.9.7) and Keylime PCR masks. */
import { Either } from "effect"
import { parseWhole, type Reader, Writer } from "./bytes.js"
import type { TpmParseError } from "./errors.js"
import { algIdOf, hashAlgFromId } from "./hashAlg.js"
import type { PcrBankSelection, PcrSelection } from "./Tpm.js"

/** One bank of a parsed selection; `sizeofSelect` is kept so it re-encodes byte for byte. */
export interface PcrSelectionEntry extends PcrBankSelection {
  readonly sizeofSelect?: number
}

/** Most TPMs have 24 PCRs: 3 select bytes. */
export const DEFAULT_SIZEOF_SELECT = 3
/** TPM2_PCR_SELECT_MAX in the TSS headers (tpm2-tools struct layout). */
export const PCR_SELECT_MAX = 4

/** PCR numbers set in a pcrSelect bitmap, ascending (bit i of byte j = PCR 8j+i). */
export const pcrsOfBitmap = (select: Uint8Array): Array<number> => {
  const out: Array<number> = []
  for (let j = 0; j < select.length; j++) {
    const b = select[j]!
    if (b === 0) continue
    for (let i = 0; i < 8; i++) if (b & (1 << i)) out.push(j * 8 + i)
  }
  return out
}

export const bitmapOfPcrs = (pcrs: ReadonlyArray<number>, size: number): Uint8Array => {
  const out = new Uint8Array(size)
  for (const p of pcrs) out[p >>> 3] = out[p >>> 3]! | (1 << (p & 7))
  return out
}

export const sizeofSelectFor = (e: PcrSelectionEntry): number => {
  let max = -1
  for (const p of e.pcrs) if (p > max) max = p
  const base = e.sizeofSelect ?? DEFAULT_SIZEOF_SELECT
  return max < 0 ? base : Math.max(base, Math.floor(max / 8) + 1)
}

export const readPcrSelection = (r: Reader): Array<PcrSelectionEntry> => {
  const S = "TPML_PCR_SELECTION"
  const count = r.u32(S)
  if (count > 16) r.fail(`count ${count} exceeds 16 banks`, S, r.offset - 4)
  const out: Array<PcrSelectionEntry> = []
  for (let i = 0; i < count; i++) {
    const at = r.offset
    const hash = hashAlgFromId(r.u16("TPMS_PCR_SELECTION"))
    if (hash === undefined) r.fail("unsupported bank hash algorithm", "TPMS_PCR_SELECTION", at)
    const sizeofSelect = r.u8("TPMS_PCR_SELECTION")
    if (sizeofSelect > PCR_SELECT_MAX) r.fail(`sizeofSelect ${sizeofSelect} > ${PCR_SELECT_MAX}`, "TPMS_PCR_SELECTION", at + 2)
    out.push({ hash, sizeofSelect, pcrs: pcrsOfBitmap(r.bytes(sizeofSelect, "TPMS_PCR_SELECTION")) })
  }
  return out
}

export const writePcrSelection = (w: Writer, sel: ReadonlyArray<PcrSelectionEntry>): void => {
  w.u32(sel.length)
  for (const e of sel) {
    const size = sizeofSelectFor(e)
    w.u16(algIdOf(e.hash)).u8(size).bytes(bitmapOfPcrs(e.pcrs, size))
  }
}

export const parsePcrSelection = (bytes: Uint8Array): Either.Either<Array<PcrSelectionEntry>, TpmParseError> =>
  parseWhole("TPML_PCR_SELECTION", bytes, readPcrSelection)

export const marshalPcrSelection = (sel: ReadonlyArray<PcrSelectionEntry>): Uint8Array => {
  const w = new Writer(64)
  writePcrSelection(w, sel)
  return w.finish()
}

/** Same banks in the same order with the same PCRs (sizeofSelect ignored). */
export const sameSelection = (a: PcrSelection, b: PcrSelection): boolean => {
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!
    const y = b[i]!
    if (x.hash !== y.hash || x.pcrs.length !== y.pcrs.length) return false
    for (let j = 0; j < x.pcrs.length; j++) if (x.pcrs[j] !== y.pcrs[j]) return false
  }
  return true
}

/** Drops sizeofSelect: the plain PcrSelection of Tpm.ts. */
export const toPcrSelection = (sel: ReadonlyArray<PcrSelectionEntry>): PcrSelection =>
  sel.map((e) => ({ hash: e.hash, pcrs: [...e.pcrs] }))

/** Sorted, de-duplicated PCRs per bank (what TPM2_Quote will report). */
export const normalizeSelection = (sel: PcrSelection): PcrSelection =>
  sel.map((e) => ({ hash: e.hash, pcrs: [...new Set(e.pcrs)].sort((a, b) => a - b) }))

/** Keylime mask "0x408000" → [15, 22]; undefined when not a 24-bit-or-less hex integer. */
export const pcrsOfMask = (mask: string): Array<number> | undefined => {
  const h = mask.startsWith("0x") || mask.startsWith("0X") ? mask.slice(2) : mask
  if (h.length === 0 || h.length > 8 || !/^[0-9a-fA-F]+$/.test(h)) return undefined
  const v = parseInt(h, 16)
  const out: Array<number> = []
  for (let i = 0; i < 32; i++) if (Math.floor(v / 2 ** i) % 2 === 1) out.push(i)
  return out
}

/** [15, 22] → "0x408000" (Keylime's spelling: lowercase hex with 0x). */
export const maskOfPcrs = (pcrs: ReadonlyArray<number>): string => {
  let v = 0
  for (const p of new Set(pcrs)) v += 2 ** p
  return "0x" + v.toString(16)
}

