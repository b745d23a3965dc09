/**
 * The tenant's one failure type: a sentence a person can act on (the CLI prints it as one line and
 * exits 1). `service` names the server that refused or could not be reached, when there is one.
 */
import { Schema } from "effect"

export class TenantError extends Schema.TaggedError<TenantError>()("TenantError", {
  message: Schema.String,
  service: Schema.optional(Schema.Literal("registrar", "verifier", "agent")),
  /** The server's answer code when it refused (the envelope's `code`). */
  status: Schema.optional(Schema.Int)
}) {}

export const tenantError = (message: string, service?: "registrar" | "verifier" | "agent") =>
  new TenantError(service === undefined ? { message } : { message, service })
