/** TPMS_ATTEST (Part 2 §10.12.12) for quotes (TPM_ST_ATTEST_QUOTE) and certify (TPM_ST_ATTEST_CERTIFY). */
import { Either } from "effect"
import { parseWhole, type Reader, Writer } from "./bytes.js"
import { TPM_ST_ATTEST_CERTIFY, TPM_ST_ATTEST_QUOTE } from "./constants.js"
import type { TpmParseError } from "./errors.js"
import { readPcrSelection, writePcrSelection, type PcrSelectionEntry } from "./pcrSelection.js"

export interface ClockInfo {
  readonly clock: bigint
  readonly resetCount: number
  readonly restartCount: number
  readonly safe: boolean
}

export interface QuoteInfo {
  readonly pcrSelect: ReadonlyArray<PcrSelectionEntry>
  readonly pcrDigest: Uint8Array
}

export interface CertifyInfo {
  readonly name: Uint8Array
  readonly qualifiedName: Uint8Array
}

interface AttestCommon {
  readonly magic: number
  readonly qualifiedSigner: Uint8Array
  readonly extraData: Uint8Array
  readonly clockInfo: ClockInfo
  readonly firmwareVersion: bigint
}

export interface QuoteAttest extends AttestCommon {
  readonly type: "quote"
  readonly attested: QuoteInfo
}

export interface CertifyAttest extends AttestCommon {
  readonly type: "certify"
  readonly attested: CertifyInfo
}

export type TpmsAttest = QuoteAttest | CertifyAttest

export const readAttest = (r: Reader): TpmsAttest => {
  const S = "TPMS_ATTEST"
  const magic = r.u32(S)
  const typeAt = r.offset
  const st = r.u16(S)
  const qualifiedSigner = r.tpm2b("TPMS_ATTEST.qualifiedSigner")
  const extraData = r.tpm2b("TPMS_ATTEST.extraData")
  const clock = r.u64("TPMS_CLOCK_INFO")
  const resetCount = r.u32("TPMS_CLOCK_INFO")
  const restartCount = r.u32("TPMS_CLOCK_INFO")
  const safeAt = r.offset
  const safeByte = r.u8("TPMS_CLOCK_INFO")
  if (safeByte > 1) r.fail(`safe must be 0 or 1, got ${safeByte}`, "TPMS_CLOCK_INFO", safeAt)
  const firmwareVersion = r.u64(S)
  const clockInfo = { clock, resetCount, restartCount, safe: safeByte === 1 }
  // Object literals, not spreads: this runs once per quote on the verifier's hot path.
  if (st === TPM_ST_ATTEST_QUOTE) {
    const pcrSelect = readPcrSelection(r)
    const pcrDigest = r.tpm2b("TPMS_QUOTE_INFO.pcrDigest")
    return { magic, type: "quote", qualifiedSigner, extraData, clockInfo, firmwareVersion, attested: { pcrSelect, pcrDigest } }
  }
  if (st === TPM_ST_ATTEST_CERTIFY) {
    const name = r.tpm2b("TPMS_CERTIFY_INFO.name")
    const qualifiedName = r.tpm2b("TPMS_CERTIFY_INFO.qualifiedName")
    return { magic, type: "certify", qualifiedSigner, extraData, clockInfo, firmwareVersion, attested: { name, qualifiedName } }
  }
  return r.fail(`unsupported attestation type 0x${st.toString(16)} (only quote 0x8018 and certify 0x8017)`, S, typeAt)
}

/** TPMS_ATTEST bytes (no TPM2B prefix, as tpm2_quote -m writes and the AK signs), fully consumed. */
export const parseAttest = (bytes: Uint8Array): Either.Either<TpmsAttest, TpmParseError> =>
  parseWhole("TPMS_ATTEST", bytes, readAttest)

export const writeAttest = (w: Writer, a: TpmsAttest): void => {
  w.u32(a.magic >>> 0)
    .u16(a.type === "quote" ? TPM_ST_ATTEST_QUOTE : TPM_ST_ATTEST_CERTIFY)
    .tpm2b(a.qualifiedSigner)
    .tpm2b(a.extraData)
    .u64(a.clockInfo.clock)
    .u32(a.clockInfo.resetCount >>> 0)
    .u32(a.clockInfo.restartCount >>> 0)
    .u8(a.clockInfo.safe ? 1 : 0)
    .u64(a.firmwareVersion)
  if (a.type === "quote") {
    writePcrSelection(w, a.attested.pcrSelect)
    w.tpm2b(a.attested.pcrDigest)
  } else {
    w.tpm2b(a.attested.name).tpm2b(a.attested.qualifiedName)
  }
}

export const marshalAttest = (a: TpmsAttest): Uint8Array => {
  const w = new Writer(256)
  writeAttest(w, a)
  return w.finish()
}
