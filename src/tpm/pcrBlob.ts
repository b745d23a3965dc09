/**
 * The tpm2-tools "serialized" PCR file (tpm2_quote -o, pcr_fwrite_serialized): a little-endian
 * memory dump of TPML_PCR_SELECTION (16 fixed slots) and TPML_DIGEST blocks (8 fixed slots).
 * Keylime carries it as the third part of the quote string. Layout: tpm-facts.md §1.7.
 */
import { Either } from "effect"
import { allocBytes } from "../crypto/encoding.js"
import { parseWith, type Reader, Writer } from "./bytes.js"
import type { TpmParseError } from "./errors.js"
import { algIdOf, digestSize, hashAlgFromId } from "./hashAlg.js"
import { PCR_SELECT_MAX, pcrsOfBitmap, bitmapOfPcrs, sizeofSelectFor, type PcrSelectionEntry } from "./pcrSelection.js"
import type { PcrBankValues, PcrValues } from "./Tpm.js"

export interface PcrBlob {
  readonly selection: ReadonlyArray<PcrSelectionEntry>
  readonly values: PcrValues
}

export interface ParsedPcrBlob {
  readonly blob: PcrBlob
  /** The digests concatenated in selection order: what a quote's pcrDigest hashes, so the verifier need not gather them. */
  readonly ordered: Uint8Array
}

const SEL_SLOTS = 16
const SEL_SLOT_SIZE = 8 // u16 hash, u8 sizeofSelect, u8[4] pcrSelect, 1 pad byte
const DIGEST_SLOTS = 8
const DIGEST_SLOT_SIZE = 66 // u16 size, u8[64]
const DIGEST_BLOCK = 4 + DIGEST_SLOTS * DIGEST_SLOT_SIZE // 532

/** Parses the blob; the digests must fill the selection exactly and the blob must be consumed. */
export const parsePcrBlob = (bytes: Uint8Array): Either.Either<PcrBlob, TpmParseError> => Either.map(readPcrBlob(bytes), (p) => p.blob)

/** parsePcrBlob, also returning the digests in selection order (the quote verifier's input). */
export const readPcrBlob = (bytes: Uint8Array): Either.Either<ParsedPcrBlob, TpmParseError> =>
  parseWith("PCR blob", bytes, (r: Reader) => {
    const S = "PCR blob TPML_PCR_SELECTION"
    const count = r.u32le(S)
    if (count > SEL_SLOTS) r.fail(`selection count ${count} exceeds ${SEL_SLOTS}`, S, 0)
    const selection: Array<PcrSelectionEntry> = []
    // Skips (unused slots, padding) are taken in one step: this parse runs once per quote on the verifier.
    for (let i = 0; i < count; i++) {
      const at = r.offset
      const alg = r.u16le(S)
      const sizeofSelect = r.u8(S)
      r.skip(PCR_SELECT_MAX + 1, S) // the bitmap, then struct padding
      const hash = hashAlgFromId(alg)
      if (hash === undefined) r.fail(`unsupported bank hash 0x${alg.toString(16)}`, S, at)
      if (sizeofSelect > PCR_SELECT_MAX) r.fail(`sizeofSelect ${sizeofSelect} > ${PCR_SELECT_MAX}`, S, at + 2)
      selection.push({ hash, sizeofSelect, pcrs: pcrsOfBitmap(r.data.subarray(at + 3, at + 3 + sizeofSelect)) })
    }
    r.skip((SEL_SLOTS - count) * SEL_SLOT_SIZE, S) // unused slots
    let needed = 0
    for (const e of selection) needed += e.pcrs.length
    const blocks = r.u32le("PCR blob")
    if (blocks !== Math.ceil(needed / DIGEST_SLOTS)) r.fail(`${blocks} digest blocks for ${needed} PCRs`, "PCR blob", r.offset - 4)
    if (blocks * DIGEST_BLOCK !== r.remaining) r.fail(`${r.remaining} bytes left for ${blocks} digest blocks`, "PCR blob TPML_DIGEST")
    const digests: Array<Uint8Array> = []
    for (let b = 0; b < blocks; b++) {
      const D = "PCR blob TPML_DIGEST"
      const n = r.u32le(D)
      if (n > DIGEST_SLOTS) r.fail(`digest count ${n} exceeds ${DIGEST_SLOTS}`, D, r.offset - 4)
      for (let i = 0; i < n; i++) {
        const at = r.offset
        const size = r.u16le(D)
        if (size > 64) r.fail(`digest size ${size} > 64`, D, at)
        digests.push(r.bytes(size, D))
        r.skip(64 - size, D)
      }
      r.skip((DIGEST_SLOTS - n) * DIGEST_SLOT_SIZE, D) // unused slots
    }
    if (digests.length !== needed) r.fail(`${digests.length} digests for ${needed} selected PCRs`, "PCR blob TPML_DIGEST")
    let total = 0
    for (const d of digests) total += d.length
    // From node's pool: a fresh Uint8Array (own ArrayBuffer) costs more than the rest of the parse.
    const ordered = allocBytes(total)
    let k = 0
    let at = 0
    const values: Array<PcrBankValues> = []
    for (const e of selection) {
      const m = new Map<number, Uint8Array>()
      const size = digestSize(e.hash)
      for (const p of e.pcrs) {
        const d = digests[k++]!
        if (d.length !== size) r.fail(`PCR ${p} of bank ${e.hash} has a ${d.length}-byte digest`, "PCR blob TPML_DIGEST")
        for (let i = 0; i < size; i++) ordered[at + i] = d[i]!
        m.set(p, d)
        at += size
      }
      values.push({ hash: e.hash, values: m })
    }
    return { blob: { selection, values }, ordered }
  })

/** Writes the blob as tpm2-tools does: unused slots and padding zeroed, 8 digests per block. */
export const marshalPcrBlob = (blob: PcrBlob): Uint8Array => {
  const digests: Array<Uint8Array> = []
  for (const e of blob.selection) {
    const bank = blob.values.find((v) => v.hash === e.hash)
    for (const p of e.pcrs) digests.push(bank?.values.get(p) ?? new Uint8Array(digestSize(e.hash)))
  }
  const blocks = Math.ceil(digests.length / DIGEST_SLOTS)
  const w = new Writer(4 + SEL_SLOTS * SEL_SLOT_SIZE + 4 + blocks * DIGEST_BLOCK)
  w.u32le(blob.selection.length)
  for (let i = 0; i < SEL_SLOTS; i++) {
    const e = blob.selection[i]
    if (e === undefined) {
      w.bytes(new Uint8Array(SEL_SLOT_SIZE))
      continue
    }
    const size = Math.min(sizeofSelectFor(e), PCR_SELECT_MAX)
    const bitmap = new Uint8Array(PCR_SELECT_MAX)
    bitmap.set(bitmapOfPcrs(e.pcrs, size))
    w.u16le(algIdOf(e.hash)).u8(size).bytes(bitmap).u8(0)
  }
  w.u32le(blocks)
  for (let b = 0; b < blocks; b++) {
    const chunk = digests.slice(b * DIGEST_SLOTS, (b + 1) * DIGEST_SLOTS)
    w.u32le(chunk.length)
    for (let i = 0; i < DIGEST_SLOTS; i++) {
      const d = chunk[i]
      const slot = new Uint8Array(64)
      if (d !== undefined) slot.set(d.subarray(0, 64))
      w.u16le(d?.length ?? 0).bytes(slot)
    }
  }
  return w.finish()
}

/** PcrValues from a selection and values map, in selection order (for building blobs). */
export const pcrBlobOf = (selection: ReadonlyArray<PcrSelectionEntry>, values: PcrValues): PcrBlob => ({ selection, values })
