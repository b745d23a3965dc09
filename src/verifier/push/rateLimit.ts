/**
 * Sliding-window counters for session creation (Keylime's RateLimiter: per client address and per
 * agent id). Per process and in memory, as Keylime's; times from the caller (Clock).
 */
export interface RateLimit {
  readonly limit: number
  readonly windowMs: number
}

export const makeRateLimiter = (rule: RateLimit) => {
  const hits = new Map<string, Array<number>>()
  /** Counts a hit at `now`: undefined when allowed, else the seconds until one is. */
  const hit = (key: string, now: number): number | undefined => {
    const list = (hits.get(key) ?? []).filter((t) => t > now - rule.windowMs)
    if (list.length >= rule.limit) {
      hits.set(key, list)
      return Math.max(1, Math.ceil((list[0]! + rule.windowMs - now) / 1000))
    }
    list.push(now)
    hits.set(key, list)
    // keep the map bounded: forget keys that have gone quiet
    if (hits.size > 10_000) for (const [k, v] of hits) if (v.every((t) => t <= now - rule.windowMs)) hits.delete(k)
    return undefined
  }
  return { hit } as const
}
