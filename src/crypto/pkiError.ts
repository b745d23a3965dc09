/** Errors of the PKI module: plain data, returned in `Either`, never thrown. */
import { Data } from "effect"

/** Building, signing or parsing a certificate or key failed. */
export class PkiError extends Data.TaggedError("PkiError")<{
  readonly reason: string
  readonly cause?: unknown
}> {}
