/**
 * The process exit code of `attest`: 0 on success, 2 for a usage error (an unknown, missing or
 * malformed option, as @effect/cli reports it, or a command's own `UsageError`), 1 for any other
 * failure. runMain's default maps every failure to 1.
 */
import { ValidationError } from "@effect/cli"
import type { Teardown } from "@effect/platform/Runtime"
import { Cause, Exit, Option } from "effect"
import { UsageError } from "../config/usageError.js"

const isUsage = (e: unknown): boolean => ValidationError.isValidationError(e) || e instanceof UsageError

export const teardown: Teardown = (exit, onExit) => {
  if (Exit.isSuccess(exit) || Cause.isInterruptedOnly(exit.cause)) return onExit(0)
  onExit(Option.exists(Cause.failureOption(exit.cause), isUsage) ? 2 : 1)
}
