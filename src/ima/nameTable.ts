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

/**
 * Open addressing over one Int32Array of (hash + 1, row index) pairs: a probe touches one cache line,
 * where a Map of 100,000 integer keys cost a bucket, a chain entry and a call per lookup.
 */
export class NameTable {
  private readonly list: Array<Row> = []
  private readonly slots: Int32Array
  private readonly mask: number

  constructor(entries: Iterable<readonly [string, DigestSet]> = []) {
    for (const [name, digests] of entries) this.list.push(rowOf(name, digests))
    let cap = 8
    while (cap < 2 * this.list.length) cap *= 2
    this.slots = new Int32Array(2 * cap)
    this.mask = cap - 1
    this.list.forEach((row, i) => {
      let s = nameHash(row.name) & this.mask
      while (this.slots[2 * s] !== 0) s = (s + 1) & this.mask
      this.slots[2 * s] = nameHash(row.name) + 1
      this.slots[2 * s + 1] = i
    })
  }

  get size(): number {
    return this.list.length
  }

  /** The row of text[a, b), whose nameHash is h. */
  lookupRow(text: string, a: number, b: number, h: number): Row | undefined {
    const slots = this.slots
    const key = h + 1
    for (let s = h & this.mask; ; s = (s + 1) & this.mask) {
      const k = slots[2 * s]!
      if (k === 0) return undefined
      if (k === key) {
        const row = this.list[slots[2 * s + 1]!]!
        if (sameName(row.name, text, a, b)) return row
      }
    }
  }

  lookup(text: string, a: number, b: number, h: number): DigestSet | undefined {
    return this.lookupRow(text, a, b, h)?.digests
  }

  get(name: string): DigestSet | undefined {
    return this.lookup(name, 0, name.length, nameHash(name))
  }
}

const rowOf = (name: string, digests: DigestSet): Row => ({
  name,
  digests,
  bytes: typeof digests === "string" && /^(?:[0-9a-f]{2})+$/.test(digests) ? new Uint8Array(Buffer.from(digests, "hex")) : undefined
})

/** bytes equals buf[at, at + n). */
export const bytesAt = (bytes: Uint8Array, buf: Uint8Array, at: number, n: number): boolean => {
  if (bytes.length !== n) return false
  for (let i = 0; i < n; i++) if (bytes[i] !== buf[at + i]) return false
  return true
}
