/**
 * One-shot digests for the replay and the policy's digest checks: `crypto.hash` (node 20.12+)
 * skips the Hash object `createHash` allocates per call, which the replay would make once per
 * event and bank. Older node falls back to createHash.
 */
import * as crypto from "node:crypto"
import type { HashAlg } from "../tpm/hashAlg.js"

export const digestOf: (alg: HashAlg, data: Uint8Array) => Buffer =
  typeof crypto.hash === "function" ? (alg, data) => crypto.hash(alg, data, "buffer") : (alg, data) => crypto.createHash(alg).update(data).digest()
