/**
 * TEST-ONLY hooks, inert unless their environment variable is set (never in a deployment):
 * - ATTEST_TEST_CRASH_AT=<point>: the process kills itself with SIGKILL at that point, so a test
 *   can show that a crash right there loses nothing;
 * - ATTEST_TEST_HOLD_PUSH_VERDICT_MS=<ms>: a push verdict waits that long before it is written,
 *   so a test can have two processes judge the same attestation at once.
 * - ATTEST_TEST_CRASH_BEFORE_PUSH_VERDICT=<agent id>: the process kills itself with SIGKILL after
 *   accepting that agent's evidence and before judging it (a moment later, so the 202 reaches the
 *   agent), leaving the verdict orphaned.
 * Used by test/verifier/twoProcesses.test.ts and test/verifier/cluster.test.ts.
 */
import { Effect } from "effect"

export type CrashPoint = "after-invalid-verdict"

const armed = process.env["ATTEST_TEST_CRASH_AT"]
const holdPushVerdictMs = Number(process.env["ATTEST_TEST_HOLD_PUSH_VERDICT_MS"] ?? 0)

export const crashPoint = (point: CrashPoint): Effect.Effect<void> =>
  armed === point ? Effect.sync(() => process.kill(process.pid, "SIGKILL")) : Effect.void

export const holdPushVerdict: Effect.Effect<void> = holdPushVerdictMs > 0 ? Effect.sleep(holdPushVerdictMs) : Effect.void

const crashBeforeVerdictOf = process.env["ATTEST_TEST_CRASH_BEFORE_PUSH_VERDICT"]

export const crashBeforePushVerdict = (agentId: string): Effect.Effect<void> =>
  crashBeforeVerdictOf === agentId ? Effect.zipRight(Effect.sleep(1000), Effect.sync(() => process.kill(process.pid, "SIGKILL"))) : Effect.void
