/**
 * What the verifier persists per agent between two verdicts (one JSON column), so the next round
 * evaluates only what is new: the IMA progress (next entry, running PCR 10 per bank, learned keys,
 * boot time), the agent's NK public key (PCR 16 binding of partial quotes, and V's encryption), the
 * TPM clock of the last good quote (it must not go back), the number of good attestations and
 * the algorithms in use. Short keys: the row is rewritten after every quote of every agent.
 */
import { Schema } from "effect"
import { ImaState, initialImaState } from "../../ima/state.js"

/** TPMS_CLOCK_INFO of the last accepted quote; `clock` (u64 milliseconds) as a decimal string in JSON. */
export const StoredClock = Schema.Struct({
  clock: Schema.BigInt,
  resetCount: Schema.Int.pipe(Schema.nonNegative()),
  restartCount: Schema.Int.pipe(Schema.nonNegative())
})
export type StoredClock = typeof StoredClock.Type

export const EvaluationState = Schema.Struct({
  /** IMA progress; the loop asks for `ima_ml_entry = ima.nextEntry`. */
  ima: ImaState,
  /**
   * The agent's NK public key (PEM) from the last accepted full quote; null before the first and
   * after a reboot. The loop asks for a partial quote (partial=1) only when it is known.
   */
  nk: Schema.NullOr(Schema.String),
  clock: Schema.NullOr(StoredClock),
  /** Keylime's `attestation_count`: accepted attestations so far. */
  count: Schema.Int.pipe(Schema.nonNegative()),
  /** `hash_alg`, `enc_alg`, `sign_alg` of the last quote that passed the algorithm gates ("" before). */
  alg: Schema.Struct({ hash: Schema.String, enc: Schema.String, sign: Schema.String })
}).annotations({ identifier: "EvaluationState" })
export type EvaluationState = typeof EvaluationState.Type

export const initialEvaluationState: EvaluationState = {
  ima: initialImaState(),
  nk: null,
  clock: null,
  count: 0,
  alg: { hash: "", enc: "", sign: "" }
}

export const EvaluationStateFromJson = Schema.parseJson(EvaluationState)

/** The stored JSON back to a state; a row that does not decode is a ParseError (the loop starts over). */
export const decodeEvaluationState = Schema.decodeUnknownEither(EvaluationStateFromJson)

/**
 * The state as the schema encodes it, written directly: the loop writes it after every quote of
 * every agent, and the value is a state by its type (only the u64 clock needs its decimal
 * string), so the schema's validation pass would only cost. Field by field, so nothing beyond the
 * schema reaches the row; reading it back goes through the schema. Equal to
 * `Schema.encodeSync(EvaluationStateFromJson)` (property-tested).
 */
export const encodeEvaluationState = (s: EvaluationState): string =>
  JSON.stringify({
    ima: { nextEntry: s.ima.nextEntry, pcrs: s.ima.pcrs, learnedKeys: s.ima.learnedKeys, bootTime: s.ima.bootTime },
    nk: s.nk,
    clock: s.clock === null ? null : { clock: s.clock.clock.toString(), resetCount: s.clock.resetCount, restartCount: s.clock.restartCount },
    count: s.count,
    alg: { hash: s.alg.hash, enc: s.alg.enc, sign: s.alg.sign }
  })
