/**
 * The IMA step: the agent's list (from the entry it was asked for) replayed into PCR 10 of the
 * quote's bank and judged by the runtime policy, from the stored incremental state (src/ima/verify.ts).
 * No runtime policy is Keylime's empty policy: every measured file is `not_in_allowlist`.
 */
import { Either } from "effect"
import { decodeRuntimePolicy, emptyRuntimePolicy } from "../../../schemas/RuntimePolicy.js"
import { type CompiledPolicy, compilePolicy } from "../../ima/policy.js"
import type { ImaKeyring } from "../../ima/signatures.js"
import type { ImaState } from "../../ima/state.js"
import { type ImaVerificationResult, verifyIma } from "../../ima/verify.js"
import type { HashAlg } from "../../tpm/hashAlg.js"

/** Keylime's EMPTY_RUNTIME_POLICY, compiled once. */
export const emptyCompiledPolicy: CompiledPolicy = Either.getOrThrow(compilePolicy(Either.getOrThrow(decodeRuntimePolicy(emptyRuntimePolicy()))))

export interface ImaStepInput {
  readonly list: string
  readonly startEntry: number
  readonly state: ImaState
  readonly policy: CompiledPolicy | undefined
  readonly bank: HashAlg
  readonly quotedPcr10: Uint8Array
  readonly bootAggregates: ReadonlyArray<string> | undefined
  readonly keyring: ImaKeyring | undefined
  readonly bootTime: number | undefined
  readonly reportTomtou: boolean
}

const NO_AGGREGATES: ReadonlyArray<string> = []

// Literal shapes per bank: a computed key would make a dictionary-mode object every round.
const pcr10Of = (bank: HashAlg, v: Uint8Array): Partial<Record<HashAlg, Uint8Array>> => {
  switch (bank) {
    case "sha1":
      return { sha1: v }
    case "sha256":
      return { sha256: v }
    case "sha384":
      return { sha384: v }
    case "sha512":
      return { sha512: v }
  }
}

export const runIma = (input: ImaStepInput): ImaVerificationResult =>
  verifyIma({
    list: input.list,
    startEntry: input.startEntry,
    state: input.state,
    policy: input.policy ?? emptyCompiledPolicy,
    quotedPcr10: pcr10Of(input.bank, input.quotedPcr10),
    bootAggregates: input.bootAggregates ?? NO_AGGREGATES,
    keyring: input.keyring,
    bootTime: input.bootTime ?? null,
    tomtouFailures: input.reportTomtou
  })
