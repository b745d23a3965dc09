/**
 * The one attestation failure type shared by every evidence check (quote, PCRs, IMA, measured boot,
 * TEE reports) and every path that reports them (pull loop, push attestations, `verify/evidence`):
 * Keylime's dotted type string (keylime-wire.md §3.4, its spellings included) and a context with a
 * human-readable message plus whatever facts the check adds (entry, path, pcr, expected, got…).
 * A failed attestation is a value of this type, never an exception.
 */
import { Schema } from "effect"

export const FailureContext = Schema.Struct(
  { message: Schema.String },
  Schema.Record({ key: Schema.String, value: Schema.Unknown })
).annotations({ identifier: "FailureContext" })
export type FailureContext = typeof FailureContext.Type

/** `{ type, context: { message, … } }`, the shape of verify/evidence `failures` items (spec §2.5). */
export const Failure = Schema.Struct({
  type: Schema.String,
  context: FailureContext
}).annotations({ identifier: "Failure" })
export type Failure = typeof Failure.Type

export const makeFailure = (type: string, message: string, facts: Readonly<Record<string, unknown>> = {}): Failure => ({
  type,
  context: { ...facts, message }
})
