/**
 * The report's signature: ECDSA P-384 with SHA-384 over bytes 0x000–0x29F; r and s are stored as
 * 72-byte little-endian integers. Only the low 48 bytes of each can be non-zero, and the rest of the
 * signature area is reserved: non-zero bytes there are refused, so no bit of a report goes unchecked.
 */
import { cryptoPort } from "../../crypto/active.js"
import type { PublicKey, SignatureScheme } from "../../crypto/port.js"
import { SNP_SIGNED_SIZE, type SnpReport } from "./report.js"

export const P384_BYTES = 48

const SCHEME: SignatureScheme = { alg: "ecdsa", hash: "sha384", encoding: "p1363" }

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
export const verifyReportSignature = (report: SnpReport, key: PublicKey): string => {
  const sig = p1363Signature(report)
  if (typeof sig === "string") return sig
  return cryptoPort().verify(key, SCHEME, report.bytes.subarray(0, SNP_SIGNED_SIZE), sig) ? "" : "the VCEK's key does not verify the report's signature"
}
