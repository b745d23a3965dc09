/**
 * TEST-ONLY seam, inert unless its environment variable is set (never in a deployment):
 * ATTEST_TEST_PUSH_AGENT_DIE_AFTER_CAPABILITIES=<n>: the push agent kills itself with SIGKILL right
 * after the verifier accepted its n-th capabilities (POST …/attestations answered 201), before it
 * collects and sends the evidence, so that a test leaves an attestation awaiting evidence at will
 * rather than by chance. Used by test/faults/pushBetweenRequests.test.ts.
 */
import { Effect } from "effect"

const dieAfter = Number(process.env["ATTEST_TEST_PUSH_AGENT_DIE_AFTER_CAPABILITIES"] ?? 0)
let accepted = 0

/** Counts one accepted POST of capabilities; the n-th kills the process (only with the seam set). */
export const capabilitiesAccepted: Effect.Effect<void> = dieAfter > 0
  ? Effect.sync(() => {
    if (++accepted === dieAfter) process.kill(process.pid, "SIGKILL")
  })
  : Effect.void
