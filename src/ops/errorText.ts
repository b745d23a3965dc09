/**
 * What an error says, with what its causes say: a SqlError's own message is "Failed to execute
 * statement" and its cause (the driver's error) says why. For start-up errors and defects, which an
 * operator reads once and must act on.
 *
 *   reasonsOf(sqlError)   // "Failed to execute statement: permission denied for schema public"
 */

/** The messages of `e` and of up to three causes below it, joined by ": " (String(e) when it has none). */
export const reasonsOf = (e: unknown): string => {
  const said: Array<string> = []
  for (let x = e; typeof x === "object" && x !== null && "message" in x && said.length < 4; x = (x as { readonly cause?: unknown }).cause) {
    const message = String(x.message)
    if (said.at(-1) !== message) said.push(message)
  }
  return said.length === 0 ? String(e) : said.join(": ")
}
