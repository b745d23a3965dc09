/**
 * path → allowed digests, looked up by a hash the parser computes while it copies the path into the
 * template data. A Map keyed by strings cut from the list text spent more time hashing and comparing
 * those slices than the SHA-256 calls cost; integer keys and a char loop over the text do not.
 */

/** Allowed digests of one name: the common single digest as a plain string (one compare, no Set). */
export type DigestSet = string | ReadonlySet<string>

export interface Row {
  readonly name: string
  readonly digests: DigestSet
  /** The single allowed digest as bytes: compared with the decoded entry digest, no hex on the hot path. */
  readonly bytes: Uint8Array | undefined
}

/**
 * FNV-1a over UTF-16 code units of s[a, b) (the same for policy names and list text), cut to 30 bits
 * so the Map key is a small integer (no heap number per lookup).
 */
export const nameHash = (s: string, a = 0, b = s.length): number => {
  let h = 0x811c9dc5
  for (let i = a; i < b; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193)
  return h & 0x3fffffff
}

const sameName = (name: string, text: string, a: number, b: number): boolean => {
  if (name.length !== b - a) return false
  for (let i = 0; i < name.length; i++) if (name.charCodeAt(i) !== text.charCodeAt(a + i)) return false
  return true
}

export class NameTable {
  private readonly rows = new Map<number, Row | Array<Row>>()
  private count = 0

  constructor(entries: Iterable<readonly [string, DigestSet]> = []) {
    for (const [name, digests] of entries) this.set(name, digests)
  }

  get size(): number {
    return this.count
  }

  private set(name: string, digests: DigestSet): void {
    const h = nameHash(name)
    const bytes = typeof digests === "string" && /^(?:[0-9a-f]{2})+$/.test(digests) ? new Uint8Array(Buffer.from(digests, "hex")) : undefined
    const row: Row = { name, digests, bytes }
    const at = this.rows.get(h)
    if (at === undefined) this.rows.set(h, row)
    else if (Array.isArray(at)) at.push(row)
    else this.rows.set(h, [at, row])
    this.count++
  }

  /** The row of text[a, b), whose nameHash is h. */
  lookupRow(text: string, a: number, b: number, h: number): Row | undefined {
    const at = this.rows.get(h)
    if (at === undefined) return undefined
    if (!Array.isArray(at)) return sameName(at.name, text, a, b) ? at : undefined
    for (const r of at) if (sameName(r.name, text, a, b)) return r
    return undefined
  }

  lookup(text: string, a: number, b: number, h: number): DigestSet | undefined {
    return this.lookupRow(text, a, b, h)?.digests
  }

  get(name: string): DigestSet | undefined {
    return this.lookup(name, 0, name.length, nameHash(name))
  }
}

/** bytes equals buf[at, at + n). */
export const bytesAt = (bytes: Uint8Array, buf: Uint8Array, at: number, n: number): boolean => {
  if (bytes.length !== n) return false
  for (let i = 0; i < n; i++) if (bytes[i] !== buf[at + i]) return false
  return true
}
