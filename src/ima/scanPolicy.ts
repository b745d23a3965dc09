/**
 * The loader's fast path: one pass over the policy text that packs `digests`, `keyrings` and
 * `ima-buf` straight into name tables, without JSON.parse building an array and a string per digest
 * (which then had to be walked again: together twice the cost of the parse). The other top-level
 * values, a few hundred bytes, go through JSON.parse.
 *
 * It accepts only the plain shape: an object whose digest maps are `{"name": ["hex", …], …}` with
 * valid digests. On anything else (bad or escaped digests, empty lists, other value types, repeated
 * top-level keys, invalid JSON) it returns undefined and the loader takes the general path,
 * JSON.parse and `compileRuntimePolicyDocument`, which decides and words the error. So its answers
 * are the general path's by construction; test/ima/load.test.ts checks that on random documents.
 */
import { NameTable, NameTableBuilder } from "./nameTable.js"

export type DigestMapField = "digests" | "keyrings" | "ima-buf"

export interface ScannedPolicy {
  /** The top-level object, each scanned digest map replaced by an empty object. */
  readonly doc: Record<string, unknown>
  readonly tables: Partial<Record<DigestMapField, NameTable>>
}

const QUOTE = 34
const BACKSLASH = 92
const COLON = 58
const COMMA = 44
const LBRACE = 123
const RBRACE = 125
const LBRACKET = 91
const RBRACKET = 93

const isMapField = (k: string): k is DigestMapField => k === "digests" || k === "keyrings" || k === "ima-buf"

/** First non-whitespace index from i (JSON whitespace only). */
const ws = (t: string, i: number): number => {
  for (;;) {
    const c = t.charCodeAt(i)
    if (c === 32 || c === 10 || c === 13 || c === 9) i++
    else return i
  }
}

/** End (after the closing quote) of the string starting at t[i] === '"', or -1. */
const stringEnd = (t: string, i: number): number => {
  const n = t.length
  for (let j = i + 1; j < n; ) {
    const c = t.charCodeAt(j)
    if (c === QUOTE) return j + 1
    j += c === BACKSLASH ? 2 : 1
  }
  return -1
}

/** End of the JSON value starting at t[i], found by brackets and strings only (JSON.parse then checks it), or -1. */
const valueEnd = (t: string, i: number): number => {
  const c = t.charCodeAt(i)
  if (c === QUOTE) return stringEnd(t, i)
  const n = t.length
  if (c === LBRACE || c === LBRACKET) {
    let depth = 0
    for (let j = i; j < n; ) {
      const d = t.charCodeAt(j)
      if (d === QUOTE) {
        j = stringEnd(t, j)
        if (j < 0) return -1
        continue
      }
      if (d === LBRACE || d === LBRACKET) depth++
      else if (d === RBRACE || d === RBRACKET) {
        if (--depth === 0) return j + 1
      }
      j++
    }
    return -1
  }
  let j = i
  while (j < n) {
    const d = t.charCodeAt(j)
    if (d === COMMA || d === RBRACE || d === RBRACKET || d === 32 || d === 10 || d === 13 || d === 9) break
    j++
  }
  return j > i ? j : -1
}

const parseSlice = (t: string, a: number, b: number): { readonly value: unknown } | undefined => {
  try {
    return { value: JSON.parse(t.slice(a, b)) }
  } catch {
    return undefined
  }
}

/** Set by scanName: the name's nameHash, and whether it must be added as a string (escapes, wide characters, too long). */
let scannedHash = 0
let scannedAsString = false

/** Longest name written as bytes (PATH_MAX); longer ones are added as strings. */
const NAME_ROOM = 4096

/**
 * Index of the quote closing the name that starts at t[a], or -1 (a control character, or no end).
 * On the way it hashes the name as nameTable's nameHash does and writes it as latin1 into
 * buf[at, at + NAME_ROOM). Small on purpose: the first load runs before the JIT has warmed up, and
 * a small loop is compiled sooner.
 */
const scanName = (t: string, a: number, buf: Uint8Array, at: number): number => {
  const n = t.length
  const end = a + NAME_ROOM
  let h = 0x811c9dc5
  let asString = false
  for (let j = a; j < n; j++) {
    const c = t.charCodeAt(j)
    if (c === QUOTE) {
      scannedHash = h & 0x3fffffff
      scannedAsString = asString || j > end
      return j
    }
    if (c < 32) return -1
    if (c === BACKSLASH) {
      asString = true
      j++
      continue
    }
    if (c > 255) asString = true
    else if (j < end) buf[at + j - a] = c
    h = Math.imul(h ^ c, 0x01000193)
  }
  return -1
}

/** Adds the digest list starting at t[i] === '[' to the builder's current row; returns its end, or -1. */
const scanDigests = (t: string, i: number, b: NameTableBuilder): number => {
  i = ws(t, i + 1)
  // At least one digest; a quote or backslash inside one is not hex, so it falls back.
  for (;;) {
    if (t.charCodeAt(i) !== QUOTE) return -1
    const e = t.indexOf('"', i + 1)
    if (e < 0 || !b.addDigest(t, i + 1, e)) return -1
    i = ws(t, e + 1)
    const c = t.charCodeAt(i)
    if (c === RBRACKET) return i + 1
    if (c !== COMMA) return -1
    i = ws(t, i + 1)
  }
}

/** A map scanned into a table, and where it ended; undefined: not the plain shape. */
const scanMap = (t: string, i: number): { readonly end: number; readonly table: NameTable } | undefined => {
  // Sized for the rest of the text, at least 45 characters per name in JSON ("/a": ["<32 hex>"],),
  // so the arrays never grow by copying; build() keeps only what is used.
  const rest = t.length - i
  const b = new NameTableBuilder(Math.ceil(rest / 45), Math.ceil(rest / 2))
  i = ws(t, i + 1)
  if (t.charCodeAt(i) === RBRACE) return { end: i + 1, table: b.build() }
  for (;;) {
    if (t.charCodeAt(i) !== QUOTE) return undefined
    const j = scanName(t, i + 1, b.nameRoom(NAME_ROOM), b.nameAt)
    if (j < 0) return undefined
    if (!scannedAsString) {
      b.addWrittenName(j - i - 1, scannedHash)
    } else {
      // escapes decoded by JSON.parse; wide characters and long names kept as the text has them
      const name = parseSlice(t, i, j + 1)
      if (name === undefined || typeof name.value !== "string") return undefined
      b.addName(name.value)
    }
    i = ws(t, j + 1)
    if (t.charCodeAt(i) !== COLON) return undefined
    i = ws(t, i + 1)
    if (t.charCodeAt(i) !== LBRACKET) return undefined
    i = scanDigests(t, i, b)
    if (i < 0) return undefined
    i = ws(t, i)
    const c = t.charCodeAt(i)
    if (c === RBRACE) return { end: i + 1, table: b.build() }
    if (c !== COMMA) return undefined
    i = ws(t, i + 1)
  }
}

/** The plain-shaped policy text → its top-level object and compiled digest maps, or undefined. */
export const scanRuntimePolicy = (t: string): ScannedPolicy | undefined => {
  let i = ws(t, 0)
  if (t.charCodeAt(i) !== LBRACE) return undefined
  const doc: Record<string, unknown> = {}
  const tables: Partial<Record<DigestMapField, NameTable>> = {}
  const seen = new Set<string>()
  i = ws(t, i + 1)
  if (t.charCodeAt(i) !== RBRACE) {
    for (;;) {
      if (t.charCodeAt(i) !== QUOTE) return undefined
      const keyEnd = stringEnd(t, i)
      if (keyEnd < 0) return undefined
      const key = parseSlice(t, i, keyEnd)
      // "__proto__" would set the prototype of `doc`; leave such documents to JSON.parse.
      if (key === undefined || typeof key.value !== "string" || key.value === "__proto__" || seen.has(key.value)) return undefined
      seen.add(key.value)
      i = ws(t, keyEnd)
      if (t.charCodeAt(i) !== COLON) return undefined
      i = ws(t, i + 1)
      if (isMapField(key.value) && t.charCodeAt(i) === LBRACE) {
        const map = scanMap(t, i)
        if (map === undefined) return undefined
        doc[key.value] = {}
        tables[key.value] = map.table
        i = map.end
      } else {
        const end = valueEnd(t, i)
        const value = end < 0 ? undefined : parseSlice(t, i, end)
        if (value === undefined) return undefined
        doc[key.value] = value.value
        i = end
      }
      i = ws(t, i)
      const c = t.charCodeAt(i)
      if (c === RBRACE) break
      if (c !== COMMA) return undefined
      i = ws(t, i + 1)
    }
  }
  return ws(t, i + 1) === t.length ? { doc, tables } : undefined
}
