/**
 * The push agent's retry delays (spec §3.2, Keylime's ExponentialBackoff): initial · multiplier^n,
 * capped at the maximum; after `maxRetries` consecutive failures the delay stays at the maximum
 * (the agent never gives up; it is a daemon). Jitter, when on, picks between half and all of it.
 * A `Retry-After` from the verifier takes precedence. Pure: the caller gives the random number.
 */
export interface BackoffOptions {
  readonly initialMs: number
  readonly maxMs: number
  readonly multiplier: number
  readonly maxRetries: number
  readonly jitter: boolean
}

export const backoffDelayMs = (o: BackoffOptions, failures: number, random = 1): number => {
  const n = Math.max(0, failures - 1)
  const raw = n >= o.maxRetries ? o.maxMs : Math.min(o.maxMs, o.initialMs * Math.pow(o.multiplier, n))
  return Math.round(o.jitter ? raw / 2 + (raw / 2) * random : raw)
}

/** `Retry-After` as seconds or an HTTP date, in ms from `now`; undefined when absent or unreadable. */
export const retryAfterMs = (header: string | undefined, now: number): number | undefined => {
  if (header === undefined) return undefined
  if (/^\d+$/.test(header.trim())) return Number(header.trim()) * 1000
  const at = Date.parse(header)
  return Number.isNaN(at) ? undefined : Math.max(0, at - now)
}
