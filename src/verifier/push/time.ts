/** Keylime's timestamps on the v3 wire: `datetime.isoformat(timespec="microseconds")` of a UTC value. */
export const isoMicros = (ms: number): string => new Date(ms).toISOString().replace(/Z$/, "000+00:00")
