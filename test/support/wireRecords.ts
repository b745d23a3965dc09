/**
 * Comparing attest's answers with Keylime's recorded exchanges (../shared/vectors/keylime-wire):
 * a recorded body without its volatile fields (RFC 6901 pointers under `/response/body/`), and the
 * media type of a content-type header.
 */

/** Removes RFC 6901 pointers (only the `/response/body/...` ones apply to a response). */
export const withoutVolatile = (body: unknown, pointers: ReadonlyArray<string>): unknown => {
  const copy: unknown = body === undefined ? undefined : JSON.parse(JSON.stringify(body))
  for (const p of pointers) {
    if (!p.startsWith("/response/body/")) continue
    const parts = p.slice("/response/body/".length).split("/").map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~"))
    let node: unknown = copy
    for (let i = 0; i < parts.length - 1 && node !== null && typeof node === "object"; i++) {
      node = (node as Record<string, unknown>)[parts[i]!]
    }
    if (node !== null && typeof node === "object") delete (node as Record<string, unknown>)[parts[parts.length - 1]!]
  }
  return copy
}

/** `application/json` of `application/json; charset=utf-8`. */
export const mediaType = (ct: string | undefined) => (ct ?? "").split(";")[0]!.trim()
