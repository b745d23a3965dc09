/** `verifyTeeEvidence`: the TEE request of `verify/evidence`, checked (see index.ts for the contract). Portable. */
import type { Failure } from "../../schemas/Evidence.js"
import { readTeeRequest } from "./request.js"
import type { ChainCache, SnpRoots } from "./snp/chain.js"
import { verifySnpEvidence } from "./snp/verify.js"
import type { VcekDirectory } from "./snp/vcekDirectory.js"

export interface TeeVerifyOptions {
  readonly now: Date
  readonly vcekDir?: VcekDirectory
  readonly chainCache?: ChainCache
  readonly roots?: SnpRoots
}

export interface TeeVerdict {
  readonly valid: boolean
  readonly failures: ReadonlyArray<Failure>
  readonly claims: Record<string, unknown>
}

export const verifyTeeEvidence = (data: unknown, options: TeeVerifyOptions): TeeVerdict => {
  const request = readTeeRequest(data)
  if (request._tag === "Left") return { valid: false, failures: request.left, claims: {} }
  const result = verifySnpEvidence(request.right.snp, options)
  return { valid: result.failures.length === 0, failures: result.failures, claims: result.claims }
}
