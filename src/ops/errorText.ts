/**
 * What an error says, with what its causes say: a SqlError's own message is "Failed to execute
 * statement" and its cause (the driver's error) says why. For start-up errors and defects, which an
 * operator reads once and must act on.
 *
 *   reasonsOf(sqlError)   // "Failed to execute statement: permission denied for schema public"
 *   codeOf(sqlError)      // "42501" (the driver's SQLSTATE or node's errno code), or undefined
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

/** The first `code` string of `e` or of up to four causes below it: PostgreSQL's SQLSTATE, node's ECONNREFUSED, SQLite's SQLITE_BUSY. */
export const codeOf = (e: unknown): string | undefined => {
  for (let x = e, depth = 0; typeof x === "object" && x !== null && depth < 5; x = (x as { readonly cause?: unknown }).cause, depth++) {
    const code = (x as { readonly code?: unknown }).code
    if (typeof code === "string" && code !== "") return code
  }
  return undefined
}
