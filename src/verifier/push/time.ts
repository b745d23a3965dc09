/**
 * Keylime's timestamps on the v3 wire: `datetime.isoformat(timespec="microseconds")` of a UTC value.
 * Up to six a push attestation: a slice of toISOString, not a regular expression's replace.
 */
export const isoMicros = (ms: number): string => {
  const iso = new Date(ms).toISOString()
  // years beyond 9999 are written with a sign and six digits, but still end in "Z"
  return `${iso.slice(0, -1)}000+00:00`
}
