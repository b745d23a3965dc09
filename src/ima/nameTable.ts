/**
 * path (or keyring / buffer name) → allowed digests, for policies of a million names. The whole
 * table is a handful of flat arrays, not an object per name: a policy of 1,000,000 digests is a few
 * objects for the GC to trace instead of millions, takes about the size of its JSON, and rows sit in
 * the policy's order so a list measured in that order walks memory forwards.
 *
 * - names: one string per 4,096 rows (a name outside latin1 widens only its own chunk);
 * - rows: per row, the name's offset and length in its chunk and its first digest's offset in pool
 *   (one row more closes the last row's digests);
 * - pool: each digest as one length byte and its bytes, compared with the decoded entry digest;
 * - slots: open addressing over (nameHash + 1, row) pairs, looked up with the hash the list parser
 *   computes while it copies the path (no string is cut from the list to look it up).
 */
import { latin1, toHex } from "../crypto/encoding.js"
import { HEX_VALUE, LOWER_HEX_VALUE } from "./hex.js"

/** Allowed digests of one name as lower-case hex: one string, or a Set when there are several. */
export type DigestSet = string | ReadonlySet<string>

/**
 * FNV-1a over UTF-16 code units of s[a, b) (the same for policy names and list text), cut to 30 bits
 * so a slot key is a small integer.
 */
export const nameHash = (s: string, a = 0, b = s.length): number => {
  let h = 0x811c9dc5
  for (let i = a; i < b; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193)
  return h & 0x3fffffff
}

// The hex tables, read once: where modules load as CommonJS (tsx, under which the benches and tools
// run), each read of an imported binding is a getter call, and these are read per digest character.
const HEX = HEX_VALUE
const LOWER_HEX = LOWER_HEX_VALUE

const CHUNK_BITS = 12
const CHUNK_MASK = (1 << CHUNK_BITS) - 1
/** Row layout in `rows`: name offset in its chunk, name length, first digest's offset in `pool`. */
const STRIDE = 3

/** Why a policy digest was refused (the caller names the field). */
export const DIGEST_RULE = "is not lower-case hex of 16 to 64 bytes"

/**
 * Keylime's digest rule, `^(?:[a-z0-9_]+:)?[0-9a-f]{32,128}$` (the "alg:" prefix seen on
 * boot_aggregate), checked on s[a, b) char by char; returns where the hex starts, or -1.
 */
export const policyDigestHexStart = (s: string, a = 0, b = s.length): number => {
  let hexAt = a
  for (let i = a; i < b; i++) {
    if (s.charCodeAt(i) === 58) {
      hexAt = i + 1
      break
    }
  }
  if (hexAt === a + 1) return -1
  for (let i = a; i < hexAt - 1; i++) {
    const c = s.charCodeAt(i)
    // [a-z0-9_]
    if (!((c >= 97 && c <= 122) || (c >= 48 && c <= 57) || c === 95)) return -1
  }
  const len = b - hexAt
  if (len < 32 || len > 128) return -1
  for (let i = hexAt; i < b; i++) if (LOWER_HEX[s.charCodeAt(i)]! < 0) return -1
  return hexAt
}

/** Builds a NameTable row by row; digests are checked and decoded as they are added. */
export class NameTableBuilder {
  private readonly chunks: Array<string> = []
  /** The current chunk: names as strings, then latin1 names written as bytes and not yet a string. */
  private pieces: Array<string> = []
  private bytes = new Uint8Array(64 * 1024)
  private byteLength = 0
  private chunkLength = 0
  private chunkRows = 0
  private rows: Int32Array
  private hashes: Int32Array
  private pool: Uint8Array
  private poolLength = 0
  private count = 0

  /** `rows` and `digestBytes` size the first allocation (both grow as needed). */
  constructor(rows = 16, digestBytes = 33 * rows) {
    this.rows = new Int32Array(STRIDE * (rows + 1))
    this.hashes = new Int32Array(rows)
    this.pool = new Uint8Array(Math.max(64, digestBytes))
  }

  /** Starts the row of `name` (h: its nameHash); the digests added next belong to it. */
  addName(name: string, h: number = nameHash(name)): void {
    if (this.count > 0 && (this.count & CHUNK_MASK) === 0) this.closeChunk()
    this.flushBytes()
    this.pieces.push(name)
    this.addRow(name.length, h)
  }

  /**
   * Room for n latin1 characters of a name at `nameAt` (the scanner writes a name there while it
   * reads it, then calls addWrittenName): no string per name, one per chunk.
   */
  nameRoom(n: number): Uint8Array {
    if (this.byteLength + n > this.bytes.length) {
      const next = new Uint8Array(Math.max(2 * this.bytes.length, this.byteLength + n))
      next.set(this.bytes.subarray(0, this.byteLength))
      this.bytes = next
    }
    return this.bytes
  }

  get nameAt(): number {
    return this.byteLength
  }

  /** Starts the row of the name of `length` latin1 characters written at nameAt (h: its nameHash). */
  addWrittenName(length: number, h: number): void {
    if (this.count > 0 && (this.count & CHUNK_MASK) === 0) {
      const at = this.byteLength
      this.closeChunk()
      this.bytes.copyWithin(0, at, at + length)
    }
    this.byteLength += length
    this.addRow(length, h)
  }

  private addRow(length: number, h: number): void {
    const r = this.count
    if (STRIDE * (r + 2) > this.rows.length) this.rows = grow32(this.rows, STRIDE * (r + 2))
    if (r >= this.hashes.length) this.hashes = grow32(this.hashes, r + 1)
    const o = STRIDE * r
    this.rows[o] = this.chunkLength
    this.rows[o + 1] = length
    this.rows[o + 2] = this.poolLength
    this.hashes[r] = h
    this.chunkLength += length
    this.chunkRows++
    this.count = r + 1
  }

  /**
   * Adds the digest s[a, b) (Keylime's rule, "alg:" prefix dropped) to the current row; false when
   * it breaks the rule. Odd-length hex passes the rule but can equal no entry digest (those are
   * bytes), so only the row records it.
   */
  addDigest(s: string, a: number, b: number): boolean {
    const n = b - a
    if ((n & 1) === 0 && n >= 32 && n <= 128) {
      // The usual digest, bare lower-case hex: checked and decoded in one pass.
      const p0 = this.reserve(1 + (n >> 1))
      const pool = this.pool
      let p = p0 + 1
      let bad = 0
      for (let i = a; i < b; i += 2) {
        const hi = LOWER_HEX[s.charCodeAt(i)]!
        const lo = LOWER_HEX[s.charCodeAt(i + 1)]!
        bad |= hi | lo
        pool[p++] = (hi << 4) | lo
      }
      if (bad >= 0) {
        pool[p0] = n >> 1
        this.poolLength = p
        return true
      }
    }
    const at = policyDigestHexStart(s, a, b)
    if (at < 0) return false
    if (((b - at) & 1) === 0) this.appendHex(s, at, (b - at) >> 1)
    return true
  }

  addDigestHex(d: string): boolean {
    return this.addDigest(d, 0, d.length)
  }

  /** Adds a digest given as hex of any case, with or without an "alg:" prefix (compilePolicy, tools). */
  addDigestLoose(d: string): void {
    const hex = d.slice(d.indexOf(":") + 1).toLowerCase()
    if (hex.length > 0 && hex.length <= 510 && (hex.length & 1) === 0 && isHex(hex)) this.appendHex(hex, 0, hex.length >> 1)
  }

  build(): NameTable {
    this.closeChunk()
    const n = this.count
    this.rows[STRIDE * n + 2] = this.poolLength
    let cap = 8
    while (cap < 2 * n) cap *= 2
    const mask = cap - 1
    const slots = new Int32Array(2 * cap)
    const hashes = this.hashes
    const rows = this.rows
    const names = this.chunks
    let dropped = 0
    for (let r = 0; r < n; r++) {
      const h = hashes[r]!
      let s = h & mask
      for (; slots[2 * s] !== 0; s = (s + 1) & mask) {
        // A repeated name (JSON: the last one wins) takes over the earlier row's slot; that row is dropped.
        const q = slots[2 * s + 1]!
        if (slots[2 * s] === h + 1 && sameName(names, rows, q, r)) {
          rows[STRIDE * q + 1] = -1
          dropped++
          break
        }
      }
      slots[2 * s] = h + 1
      slots[2 * s + 1] = r
    }
    return new NameTable({
      names: this.chunks,
      rows: this.rows.length === STRIDE * (n + 1) ? this.rows : this.rows.slice(0, STRIDE * (n + 1)),
      pool: this.pool.length === this.poolLength ? this.pool : this.pool.slice(0, this.poolLength),
      slots,
      mask,
      count: n,
      size: n - dropped
    })
  }

  /** Room for n more pool bytes; returns where they start. */
  private reserve(n: number): number {
    if (this.poolLength + n > this.pool.length) {
      const next = new Uint8Array(Math.max(2 * this.pool.length, this.poolLength + n))
      next.set(this.pool.subarray(0, this.poolLength))
      this.pool = next
    }
    return this.poolLength
  }

  /** Appends d[at, at + 2·bytes) (checked hex) as one length byte and the bytes. */
  private appendHex(d: string, at: number, bytes: number): void {
    let p = this.reserve(1 + bytes)
    const pool = this.pool
    pool[p++] = bytes
    for (let i = at; i < at + 2 * bytes; i += 2) pool[p++] = (HEX[d.charCodeAt(i)]! << 4) | HEX[d.charCodeAt(i + 1)]!
    this.poolLength = p
  }

  private flushBytes(): void {
    if (this.byteLength === 0) return
    this.pieces.push(latin1(this.bytes.subarray(0, this.byteLength)))
    this.byteLength = 0
  }

  private closeChunk(): void {
    this.flushBytes()
    if (this.chunkRows === 0) return
    this.chunks.push(this.pieces.length === 1 ? this.pieces[0]! : this.pieces.join(""))
    this.pieces = []
    this.chunkLength = 0
    this.chunkRows = 0
  }
}

/** Whether rows q and r (already in their chunks) have the same name. */
const sameName = (names: ReadonlyArray<string>, rows: Int32Array, q: number, r: number): boolean => {
  const len = rows[STRIDE * q + 1]!
  if (len !== rows[STRIDE * r + 1]!) return false
  const a = names[q >>> CHUNK_BITS]!
  const b = names[r >>> CHUNK_BITS]!
  const ao = rows[STRIDE * q]!
  const bo = rows[STRIDE * r]!
  for (let i = 0; i < len; i++) if (a.charCodeAt(ao + i) !== b.charCodeAt(bo + i)) return false
  return true
}

const grow32 = (a: Int32Array, min: number): Int32Array => {
  const next = new Int32Array(Math.max(min, 2 * a.length))
  next.set(a)
  return next
}

const isHex = (s: string): boolean => {
  for (let i = 0; i < s.length; i++) if (HEX[s.charCodeAt(i)]! < 0) return false
  return true
}

let emptyTable: NameTable | undefined

interface Layout {
  readonly names: ReadonlyArray<string>
  readonly rows: Int32Array
  readonly pool: Uint8Array
  readonly slots: Int32Array
  readonly mask: number
  /** Rows, and names (rows less those a repeated name replaced). */
  readonly count: number
  readonly size: number
}

export class NameTable {
  private readonly names: ReadonlyArray<string>
  private readonly rows: Int32Array
  private readonly pool: Uint8Array
  private readonly slots: Int32Array
  private readonly mask: number
  private readonly count: number
  readonly size: number

  constructor(layout: Layout) {
    this.names = layout.names
    this.rows = layout.rows
    this.pool = layout.pool
    this.slots = layout.slots
    this.mask = layout.mask
    this.count = layout.count
    this.size = layout.size
  }

  /** A table from name → digests (hex, any case, "alg:" prefix allowed); the last of repeated names wins. */
  static fromEntries(entries: Iterable<readonly [string, DigestSet | ReadonlyArray<string>]>): NameTable {
    const b = new NameTableBuilder()
    for (const [name, digests] of entries) {
      b.addName(name)
      if (typeof digests === "string") b.addDigestLoose(digests)
      else for (const d of digests) b.addDigestLoose(d)
    }
    return b.build()
  }

  /** The table with no names. */
  static get empty(): NameTable {
    return (emptyTable ??= new NameTableBuilder(0).build())
  }

  /** The row of text[a, b), whose nameHash is h, or -1. */
  lookupRow(text: string, a: number, b: number, h: number): number {
    const slots = this.slots
    const mask = this.mask
    const key = h + 1
    for (let s = h & mask; ; s = (s + 1) & mask) {
      const k = slots[2 * s]!
      if (k === 0) return -1
      if (k === key) {
        const r = slots[2 * s + 1]!
        if (this.nameIs(r, text, a, b)) return r
      }
    }
  }

  /** Whether buf[at, at + n) is one of the row's digests. */
  allows(row: number, buf: Uint8Array, at: number, n: number): boolean {
    const pool = this.pool
    const end = this.rows[STRIDE * row + STRIDE + 2]!
    let p = this.rows[STRIDE * row + 2]!
    while (p < end) {
      const len = pool[p]!
      if (len === n) {
        let i = 0
        while (i < n && pool[p + 1 + i] === buf[at + i]) i++
        if (i === n) return true
      }
      p += 1 + len
    }
    return false
  }

  has(name: string): boolean {
    return this.lookupRow(name, 0, name.length, nameHash(name)) >= 0
  }

  /** The name's digests as hex (tools and tests; the engine compares bytes with `allows`). */
  get(name: string): DigestSet | undefined {
    const r = this.lookupRow(name, 0, name.length, nameHash(name))
    return r < 0 ? undefined : this.digestsOf(r)
  }

  /** Every name with its digests, in the policy's order. */
  *entries(): IterableIterator<[string, DigestSet]> {
    for (let r = 0; r < this.count; r++) if (this.rows[STRIDE * r + 1]! >= 0) yield [this.nameOf(r), this.digestsOf(r)]
  }

  private nameOf(r: number): string {
    const o = STRIDE * r
    return this.names[r >>> CHUNK_BITS]!.slice(this.rows[o]!, this.rows[o]! + this.rows[o + 1]!)
  }

  private digestsOf(r: number): DigestSet {
    const set = new Set<string>()
    const end = this.rows[STRIDE * r + STRIDE + 2]!
    for (let p = this.rows[STRIDE * r + 2]!; p < end; p += 1 + this.pool[p]!) {
      set.add(toHex(this.pool.subarray(p + 1, p + 1 + this.pool[p]!)))
    }
    return set.size === 1 ? [...set][0]! : set
  }

  private nameIs(r: number, text: string, a: number, b: number): boolean {
    const o = STRIDE * r
    const len = this.rows[o + 1]!
    if (len !== b - a) return false
    const chunk = this.names[r >>> CHUNK_BITS]!
    const at = this.rows[o]!
    for (let i = 0; i < len; i++) if (chunk.charCodeAt(at + i) !== text.charCodeAt(a + i)) return false
    return true
  }
}
