/** The simulator's PCR banks: 24 PCRs per active bank, zero at reset, extend = H(old ‖ digest). */
import { createHash } from "node:crypto"
import { Either } from "effect"
import { digestSize } from "../hashAlg.js"
import type { HashAlg, PcrSelection, PcrValues } from "../Tpm.js"

export const PCR_COUNT = 24

/** PCRs TPM2_PCR_Reset may clear from locality 0 (PC Client profile: debug PCR 16, application PCR 23). */
export const RESETTABLE_PCRS: ReadonlyArray<number> = [16, 23]

export class PcrBanks {
  private readonly banks = new Map<HashAlg, Array<Uint8Array>>()

  constructor(readonly active: ReadonlyArray<HashAlg>) {
    for (const alg of active) {
      this.banks.set(alg, Array.from({ length: PCR_COUNT }, () => new Uint8Array(digestSize(alg))))
    }
  }

  /** Values in selection order; fails naming the first PCR or bank the TPM does not have. */
  read(selection: PcrSelection): Either.Either<PcrValues, string> {
    const out: Array<{ hash: HashAlg; values: ReadonlyMap<number, Uint8Array> }> = []
    for (const sel of selection) {
      const bank = this.banks.get(sel.hash)
      if (bank === undefined) return Either.left(`PCR bank ${sel.hash} is not active`)
      const values = new Map<number, Uint8Array>()
      for (const pcr of [...sel.pcrs].sort((a, b) => a - b)) {
        if (!Number.isInteger(pcr) || pcr < 0 || pcr >= PCR_COUNT) return Either.left(`no PCR ${pcr}`)
        values.set(pcr, new Uint8Array(bank[pcr]!))
      }
      out.push({ hash: sel.hash, values })
    }
    return Either.right(out)
  }

  /** Zeroes the PCR in every bank; other PCRs fail as a TPM answers TPM_RC_LOCALITY at locality 0. */
  reset(pcr: number): Either.Either<void, string> {
    if (!Number.isInteger(pcr) || pcr < 0 || pcr >= PCR_COUNT) return Either.left(`no PCR ${pcr}`)
    if (!RESETTABLE_PCRS.includes(pcr)) {
      return Either.left(`PCR ${pcr} is not resettable from locality 0 (TPM_RC_LOCALITY); only PCRs ${RESETTABLE_PCRS.join(" and ")} are`)
    }
    for (const bank of this.banks.values()) bank[pcr] = new Uint8Array(bank[pcr]!.length)
    return Either.right(undefined)
  }

  /** Checks every digest first, so a bad request extends nothing. */
  extend(pcr: number, digests: ReadonlyArray<{ readonly hash: HashAlg; readonly digest: Uint8Array }>): Either.Either<void, string> {
    if (!Number.isInteger(pcr) || pcr < 0 || pcr >= PCR_COUNT) return Either.left(`no PCR ${pcr}`)
    for (const d of digests) {
      if (!this.banks.has(d.hash)) return Either.left(`PCR bank ${d.hash} is not active`)
      if (d.digest.length !== digestSize(d.hash)) {
        return Either.left(`a ${d.hash} digest has ${digestSize(d.hash)} bytes, got ${d.digest.length}`)
      }
    }
    for (const d of digests) {
      const bank = this.banks.get(d.hash)!
      bank[pcr] = new Uint8Array(createHash(d.hash).update(bank[pcr]!).update(d.digest).digest())
    }
    return Either.right(undefined)
  }
}
