/**
 * A command line that cannot be acted on: the commands' libraries (tenant, policy, ear) fail with it
 * and `attest` exits 2 for it (src/cli/exitCode.ts). It lives below both so a library never
 * imports the command line.
 */
import { Schema } from "effect"

/** A command line that cannot be acted on (the message was printed for a person). */
export class UsageError extends Schema.TaggedError<UsageError>()("UsageError", { message: Schema.String }) {}
