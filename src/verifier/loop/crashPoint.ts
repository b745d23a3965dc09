/**
 * TEST-ONLY: a named point where the process kills itself with SIGKILL when the environment
 * variable ATTEST_TEST_CRASH_AT names it, so a test can show that a crash right there loses
 * nothing (test/verifier/twoProcesses.test.ts). Unset in every deployment: then it does nothing.
 */
import { Effect } from "effect"

export type CrashPoint = "after-invalid-verdict"

const armed = process.env["ATTEST_TEST_CRASH_AT"]

export const crashPoint = (point: CrashPoint): Effect.Effect<void> =>
  armed === point ? Effect.sync(() => process.kill(process.pid, "SIGKILL")) : Effect.void
