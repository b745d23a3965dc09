/** Typed failures of the boot-log engine. */
import { Data, Schema } from "effect"

/** The event log could not be parsed: which event, which field, at which byte offset of the log, why. */
export class EventLogParseError extends Data.TaggedError("EventLogParseError")<{
  /** Index of the event in the log (0 = the Spec ID header event); -1 before the first event. */
  readonly eventIndex: number
  readonly field: string
  readonly offset: number
  readonly reason: string
}> {
  override get message(): string {
    const where = this.eventIndex >= 0 ? `event ${this.eventIndex}, ` : ""
    return `${where}${this.field} at byte ${this.offset}: ${this.reason}`
  }
}

/** A reference state could not be built from a log (Keylime's `create measured-boot` refusals). */
export class RefStateCreateError extends Data.TaggedError("RefStateCreateError")<{
  readonly message: string
}> {}

/** No measured-boot policy of that name is registered. Crosses the CLI and HTTP boundaries. */
export class UnknownMbPolicyError extends Schema.TaggedError<UnknownMbPolicyError>()("UnknownMbPolicyError", {
  name: Schema.String,
  known: Schema.Array(Schema.String)
}) {
  override get message(): string {
    return `no measured-boot policy named '${this.name}' (known: ${this.known.join(", ")})`
  }
}
