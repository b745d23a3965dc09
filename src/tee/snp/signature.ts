/**
 * The report's signature: ECDSA P-384 with SHA-384 over bytes 0x000–0x29F; r and s are stored as
 * 72-byte little-endian integers. Only the low 48 bytes of each can be non-zero, and the rest of the
 * signature area is reserved: non-zero bytes there are refused, so no bit of a report goes unchecked.
 */
import * as crypto from "node:crypto"
import { SNP_SIGNED_SIZE, type SnpReport } from "./report.js"

const P384_BYTES = 48

const allZero = (b: Uint8Array): boolean => {
  for (let i = 0; i < b.length; i++) if (b[i] !== 0) return false
  return true
}

/** r ‖ s big-endian (IEEE P1363), or why the stored signature is malformed. */
export const p1363Signature = (report: SnpReport): Uint8Array | string => {
  if (!allZero(report.signatureR.subarray(P384_BYTES)) || !allZero(report.signatureS.subarray(P384_BYTES))) {
    return "r or s has non-zero bytes above the 48 of a P-384 value"
  }
  if (!allZero(report.signatureReserved)) return "the reserved bytes after r and s are not zero"
  const out = new Uint8Array(2 * P384_BYTES)
  for (let i = 0; i < P384_BYTES; i++) {
    out[P384_BYTES - 1 - i] = report.signatureR[i]!
    out[2 * P384_BYTES - 1 - i] = report.signatureS[i]!
  }
  return out
}

/** "" when the VCEK key signed the report, otherwise why not. */
export const verifyReportSignature = (report: SnpReport, key: crypto.KeyObject): string => {
  const sig = p1363Signature(report)
  if (typeof sig === "string") return sig
  try {
    return crypto.verify("sha384", report.bytes.subarray(0, SNP_SIGNED_SIZE), { key, dsaEncoding: "ieee-p1363" }, sig)
      ? ""
      : "the VCEK's key does not verify the report's signature"
  } catch (e) {
    return `the signature could not be checked: ${e instanceof Error ? e.message : String(e)}`
  }
}

/** Signs a report's bytes 0x000–0x29F with a P-384 key and stores r and s little-endian (tests and simulators). */
export const signReport = (report: Uint8Array, key: crypto.KeyObject): Uint8Array => {
  const out = new Uint8Array(report)
  const sig = crypto.sign("sha384", out.subarray(0, SNP_SIGNED_SIZE), { key, dsaEncoding: "ieee-p1363" })
  out.fill(0, SNP_SIGNED_SIZE)
  for (let i = 0; i < P384_BYTES; i++) {
    out[SNP_SIGNED_SIZE + i] = sig[P384_BYTES - 1 - i]!
    out[SNP_SIGNED_SIZE + 72 + i] = sig[2 * P384_BYTES - 1 - i]!
  }
  return out
}
