/**
 * Attestation failures as values, with Keylime's event ids (reference keylime-wire.md §3.4),
 * including its spellings ("ima.validator.ima-sig", "qoute_validation").
 */
import { Schema } from "effect"
import { Failure } from "../../schemas/Evidence.js"

export const FailureType = {
  parserEntry: "ima.parser.entry",
  pcrMismatch: "ima.pcr_mismatch",
  quoteProgress: "ima.quote_progress",
  invalidKey: "ima.invalid_key",
  imaHash: "ima.validation.ima_hash",
  imaPcr: "ima.validation.ima_pcr",
  tomtou: "ima.validation.tomtou",
  notInAllowlist: "ima.validation.ima-ng.not_in_allowlist",
  runtimePolicyHash: "ima.validation.ima-ng.runtime_policy_hash",
  invalidSignature: "ima.validator.ima-sig.invalid_signature",
  invalidImaEntryNb: "qoute_validation.invalid_ima_entry_nb"
} as const

/**
 * `{ type, context: { message, ... } }` as Keylime reports it (verify/evidence `failures` items): the
 * one attestation Failure (schemas/Evidence.ts) whose context may also name the entry and the file,
 * so every ImaFailure is a Failure.
 */
export const ImaFailure = Schema.Struct({
  type: Failure.fields.type,
  context: Schema.Struct({
    message: Schema.String,
    /** 1-based entry number in the agent's whole list (offset + position), when the failure is about one entry. */
    line: Schema.optional(Schema.Number),
    path: Schema.optional(Schema.String)
  })
})
export type ImaFailure = typeof ImaFailure.Type

export const failure = (type: string, message: string, line?: number, path?: string): ImaFailure => ({
  type,
  context: {
    message,
    ...(line === undefined ? {} : { line }),
    ...(path === undefined ? {} : { path })
  }
})
