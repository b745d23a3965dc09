/**
 * Incremental IMA attestation state per agent: what the verifier persists between rounds so only new
 * entries are evaluated (Keylime AgentAttestState: next_ima_ml_entry, PCR 10 per bank, learned keys,
 * boottime), and the reset rules of keylime/cloud_verifier_common.py.
 */
import { Schema } from "effect"
import { failure, FailureType, type ImaFailure } from "./failure.js"

const Hex = Schema.String.pipe(Schema.pattern(/^[0-9a-f]*$/))

export const ImaState = Schema.Struct({
  /** Index of the next entry to ask the agent for (= entries accepted so far). */
  nextEntry: Schema.Int.pipe(Schema.greaterThanOrEqualTo(0)),
  /** Running PCR 10 after `nextEntry` entries, per bank (hex). Missing bank = zeros, valid only at entry 0. */
  pcrs: Schema.Struct({
    sha1: Schema.optionalWith(Hex, { exact: true }),
    sha256: Schema.optionalWith(Hex, { exact: true }),
    sha384: Schema.optionalWith(Hex, { exact: true }),
    sha512: Schema.optionalWith(Hex, { exact: true })
  }),
  /** Keys learned from ima-buf entries: keyring name and base64 SPKI DER. */
  learnedKeys: Schema.Array(Schema.Struct({ keyring: Schema.String, der: Schema.String })),
  /** Agent boot time (seconds since epoch) the state belongs to; null until known. */
  bootTime: Schema.NullOr(Schema.Number)
})
export type ImaState = typeof ImaState.Type

export const ImaStateFromJson = Schema.parseJson(ImaState)
export const decodeImaState = Schema.decodeUnknownEither(ImaStateFromJson)
export const encodeImaState = Schema.encodeSync(ImaStateFromJson)

export const initialImaState = (bootTime: number | null = null): ImaState => ({
  nextEntry: 0,
  pcrs: {},
  learnedKeys: [],
  bootTime
})

export type StartDecision =
  /** Evaluate from this state. */
  | { readonly _tag: "Continue"; readonly state: ImaState }
  /** Boot time changed mid-way: state reset; ask the agent again from entry 0, no failure. */
  | { readonly _tag: "Retry"; readonly state: ImaState }
  /** The agent answered from another entry than asked. */
  | { readonly _tag: "Reject"; readonly state: ImaState; readonly failure: ImaFailure }

/**
 * Keylime's rules: entry 0 → start over; entry ≠ the stored next entry →
 * `qoute_validation.invalid_ima_entry_nb`; boot time ≠ stored → reset (and retry unless entry is 0).
 */
export const decideStart = (
  state: ImaState | undefined,
  startEntry: number,
  bootTime: number | null | undefined
): StartDecision => {
  const known = state ?? initialImaState(bootTime ?? null)
  const boot = bootTime ?? known.bootTime
  if (startEntry === 0) return { _tag: "Continue", state: initialImaState(boot) }
  if (bootTime !== undefined && bootTime !== null && known.bootTime !== null && bootTime !== known.bootTime) {
    return { _tag: "Retry", state: initialImaState(bootTime) }
  }
  if (startEntry !== known.nextEntry) {
    return {
      _tag: "Reject",
      state: initialImaState(boot),
      failure: failure(
        FailureType.invalidImaEntryNb,
        `IMA measurement list starts at entry ${startEntry} but entry ${known.nextEntry} was requested`
      )
    }
  }
  return { _tag: "Continue", state: { ...known, bootTime: boot } }
}
