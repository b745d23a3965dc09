/**
 * Sliding-window counters for the session routes (Keylime's RateLimiter), per process and in
 * memory; times from the caller (Clock). Sessions.ts keys them by client address (creations, failed
 * proofs) and by agent id (tokens issued: only the agent's own proofs count). An IPv6 client is
 * counted by its /64 (one host holds a whole /64), and the map is bounded.
 */
export interface RateLimit {
  readonly limit: number
  readonly windowMs: number
}

/** Keys kept at most; beyond, quiet keys go first, then the oldest. */
const MAX_KEYS = 50_000

export const makeRateLimiter = (rule: RateLimit) => {
  const hits = new Map<string, Array<number>>()
  const recent = (key: string, now: number) => (hits.get(key) ?? []).filter((t) => t > now - rule.windowMs)
  const waitOf = (list: ReadonlyArray<number>, now: number) => Math.max(1, Math.ceil((list[0]! + rule.windowMs - now) / 1000))
  const bound = (now: number) => {
    if (hits.size <= MAX_KEYS) return
    for (const [k, v] of hits) if (v.every((t) => t <= now - rule.windowMs)) hits.delete(k)
    for (const k of hits.keys()) {
      if (hits.size <= MAX_KEYS) break
      hits.delete(k)
    }
  }
  /** The seconds until `key` may act again at `now`, or undefined when it may now (nothing counted). */
  const wait = (key: string, now: number): number | undefined => {
    const list = recent(key, now)
    return list.length >= rule.limit ? waitOf(list, now) : undefined
  }
  /** Counts an act of `key` at `now`. */
  const count = (key: string, now: number): void => {
    const list = recent(key, now)
    list.push(now)
    hits.delete(key)
    hits.set(key, list)
    bound(now)
  }
  /** Counts an act at `now` when allowed (undefined); else the seconds until one is, counting nothing. */
  const hit = (key: string, now: number): number | undefined => {
    const w = wait(key, now)
    if (w === undefined) count(key, now)
    return w
  }
  return { hit, wait, count } as const
}

/** The key a client address is counted under: IPv4 as is, IPv6 by its /64. */
export const addressKey = (address: string): string => {
  const v4 = /^(?:::ffff:)?(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address)
  if (v4 !== null) return v4[1]!
  if (!address.includes(":")) return address
  const [head = "", tail] = address.toLowerCase().split("%")[0]!.split("::") as [string, string | undefined]
  const left = head === "" ? [] : head.split(":")
  const right = tail === undefined || tail === "" ? [] : tail.split(":")
  const groups = tail === undefined ? left : [...left, ...Array<string>(Math.max(0, 8 - left.length - right.length)).fill("0"), ...right]
  return `${groups.slice(0, 4).map((g) => g.replace(/^0+(?=.)/, "")).join(":")}::/64`
}
