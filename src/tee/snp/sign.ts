/** Signing reports with a node P-384 key (tests and simulators); verification is signature.ts. */
import * as crypto from "node:crypto"
import { SNP_SIGNED_SIZE } from "./report.js"
import { P384_BYTES } from "./signature.js"

/** Signs a report's bytes 0x000–0x29F with a P-384 key and stores r and s little-endian. */
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
