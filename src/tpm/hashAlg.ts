/** Hash algorithms as TPM_ALG ids, digest sizes and names. */
import type { HashAlg } from "./Tpm.js"
import { TPM_ALG } from "./constants.js"

export type { HashAlg } from "./Tpm.js"

export const hashAlgs: ReadonlyArray<HashAlg> = ["sha1", "sha256", "sha384", "sha512"]

export const algIdOf = (h: HashAlg): number => TPM_ALG[h]

export const hashAlgFromId = (id: number): HashAlg | undefined => {
  switch (id) {
    case TPM_ALG.sha1:
      return "sha1"
    case TPM_ALG.sha256:
      return "sha256"
    case TPM_ALG.sha384:
      return "sha384"
    case TPM_ALG.sha512:
      return "sha512"
    default:
      return undefined
  }
}

const sizes: Record<HashAlg, number> = { sha1: 20, sha256: 32, sha384: 48, sha512: 64 }

export const digestSize = (h: HashAlg): number => sizes[h]

/** Accepts "sha256", "SHA256", "sha-256" (Keylime and tpm2-tools spellings). */
export const hashAlgFromName = (name: string): HashAlg | undefined => {
  const n = name.toLowerCase().replace("-", "")
  return n === "sha1" || n === "sha256" || n === "sha384" || n === "sha512" ? n : undefined
}
