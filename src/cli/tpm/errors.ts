/** What `attest tpm …` fails with (exit code 1); the message was already printed for a person. */
import { Schema } from "effect"

export class TpmCommandError extends Schema.TaggedError<TpmCommandError>()("TpmCommandError", {
  /** Which check or input failed, e.g. "nonce", "signature", "--ak". */
  reason: Schema.String,
  message: Schema.String
}) {}
