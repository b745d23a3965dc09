/**
 * One-shot digests for the replay and the policy's digest checks, through the crypto port (on node
 * `crypto.hash`, which skips the Hash object `createHash` would allocate per event and bank).
 */
import { cryptoPort } from "../crypto/active.js"
import type { HashAlg } from "../tpm/hashAlg.js"

export const digestOf = (alg: HashAlg, data: Uint8Array): Uint8Array => cryptoPort().digest(alg, data)

/** H(data) equals `digest`. */
export const digestIs = (alg: HashAlg, data: Uint8Array, digest: Uint8Array): boolean => {
  const d = digestOf(alg, data)
  if (d.length !== digest.length) return false
  for (let i = 0; i < d.length; i++) if (d[i] !== digest[i]) return false
  return true
}
