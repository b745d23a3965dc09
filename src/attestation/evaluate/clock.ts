/**
 * The TPM clock check of Keylime's `check_quote_timing`: against the clock of the last accepted
 * quote, resetCount must not decrease; with the same resetCount, restartCount must not decrease;
 * with both the same, the clock must have advanced; and the clock must be `safe`. A TPM Reset (a
 * reboot) raises resetCount and zeroes restartCount, so restartCount is only compared within one
 * reset; Keylime compares it across resets and refuses the first quote after a reboot that
 * follows a suspend (deliberate difference).
 */
import type { ClockInfo } from "../../tpm/attest.js"
import type { StoredClock } from "./state.js"

/** Undefined when the clock is acceptable, otherwise Keylime's reason text. */
export const clockProblem = (previous: StoredClock | null, now: ClockInfo): string | undefined => {
  if (previous !== null) {
    if (now.resetCount < previous.resetCount) return "resetCount value decreased on TPM between two consecutive quotes"
    if (now.resetCount === previous.resetCount && now.restartCount < previous.restartCount) {
      return "restartCount value decreased on TPM between two consecutive quotes"
    }
  }
  if (!now.safe) return "clock safe flag is disabled"
  if (previous !== null && now.resetCount === previous.resetCount && now.restartCount === previous.restartCount && now.clock <= previous.clock) {
    return "clock timestamp issued by TPM did not increase between two consecutive quotes"
  }
  return undefined
}

export const storedClockOf = (c: ClockInfo): StoredClock => ({ clock: c.clock, resetCount: c.resetCount, restartCount: c.restartCount })
