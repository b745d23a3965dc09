/**
 * One line of the ASCII IMA measurement list → its fields and the template data the kernel hashed
 * (tpm-facts.md §4.1–4.2, Keylime ast.py split rules). The hot path fills a reused scratch record
 * and a reused buffer; `parseEntry` wraps it for callers that want an immutable value.
 */
import { Data, Either } from "effect"
import { allocBytes } from "../crypto/encoding.js"
import { HEX_VALUE } from "./hex.js"
import { nameHash } from "./nameTable.js"

export type TemplateName = "ima" | "ima-ng" | "ima-sig" | "ima-buf"

const TCG_EVENT_NAME_LEN_MAX = 255

export class ImaParseError extends Data.TaggedError("ImaParseError")<{
  /** 1-based line (entry) number. */
  readonly line: number
  readonly reason: string
}> {
  override get message(): string {
    return `IMA list line ${this.line}: ${this.reason}`
  }
}

/** Growable scratch buffer for template data: one per evaluation, not per entry. */
export class TemplateBuffer {
  buf: Uint8Array = allocBytes(4096)
  private views: Array<Uint8Array | undefined> = []
  ensure(n: number): void {
    if (n > this.buf.length) {
      this.buf = allocBytes(Math.max(n, this.buf.length * 2))
      this.views = []
    }
  }
  /** The first `n` bytes as a view, cached per length: template lengths repeat, so the hot loop allocates none. */
  view(n: number): Uint8Array {
    let v = this.views[n]
    if (v === undefined) {
      v = new Uint8Array(this.buf.buffer, this.buf.byteOffset, n)
      this.views[n] = v
    }
    return v
  }
}

/** Fields of one entry; mutated in place by `parseLineInto`. */
export interface EntryFields {
  /** PCR and template-hash columns as offsets into the parsed text (sliced only when needed). */
  pcrStart: number
  pcrEnd: number
  thStart: number
  thEnd: number
  template: TemplateName
  digestAlg: string
  /** The name as offsets into the text (`nameOf` slices it, only when needed), and its nameHash. */
  nameStart: number
  nameEnd: number
  nameHash: number
  /** Digest hex as offsets into the text; `digestHexOf` slices it when needed. */
  hexStart: number
  hexEnd: number
  /** sig (ima-sig) or buf (ima-buf) as hex, "" when absent. */
  extraHex: string
  /** Template data occupies tb.buf[0, length). */
  length: number
  /** Offsets of the file digest and of the extra field (sig/buf) inside the template data. */
  digestStart: number
  digestLength: number
  extraStart: number
  extraLength: number
}

export const emptyFields = (): EntryFields => ({
  pcrStart: 0,
  pcrEnd: 0,
  thStart: 0,
  thEnd: 0,
  template: "ima-ng",
  digestAlg: "",
  nameStart: 0,
  nameEnd: 0,
  nameHash: 0,
  hexStart: 0,
  hexEnd: 0,
  extraHex: "",
  length: 0,
  digestStart: 0,
  digestLength: 0,
  extraStart: 0,
  extraLength: 0
})

export { HEX_VALUE } from "./hex.js"

// Read once: where modules load as CommonJS (tsx, under which the benches and tools run), each read
// of an imported binding is a getter call, and this table is read twice per hex digit.
const HEX = HEX_VALUE
const hexVal = (c: number): number => HEX[c]!

/** Decodes text[a, b) (even length) into buf at off; -1 on a bad character. */
const decodeHexAt = (text: string, a: number, b: number, buf: Uint8Array, off: number): number => {
  if (((b - a) & 1) !== 0) return -1
  let bad = 0
  for (let i = a; i < b; i += 2) {
    const hi = hexVal(text.charCodeAt(i))
    const lo = hexVal(text.charCodeAt(i + 1))
    bad |= hi | lo
    buf[off + ((i - a) >> 1)] = (hi << 4) | lo
  }
  return bad < 0 ? -1 : (b - a) >> 1
}

let lastNameHash = 0

/**
 * Writes text[a, b) as UTF-8 (ASCII, nearly every path, is copied in JS) and leaves the name's
 * FNV-1a hash (nameTable.ts) in lastNameHash: the policy lookup needs it and the loop is here anyway.
 */
const writeUtf8At = (text: string, a: number, b: number, buf: Uint8Array, off: number): number => {
  let h = 0x811c9dc5
  for (let i = a; i < b; i++) {
    const c = text.charCodeAt(i)
    if (c >= 128) {
      lastNameHash = nameHash(text, a, b)
      return encoder.encodeInto(text.slice(a, b), buf.subarray(off)).written
    }
    h = Math.imul(h ^ c, 0x01000193)
    buf[off + i - a] = c
  }
  lastNameHash = h & 0x3fffffff
  return b - a
}

/** UTF-8 encode; ASCII (nearly every path) is copied in JS, the rest goes through TextEncoder. */
const writeUtf8 = (buf: Uint8Array, off: number, s: string): number => {
  const n = s.length
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i)
    if (c >= 128) return encoder.encodeInto(s, buf.subarray(off)).written
    buf[off + i] = c
  }
  return n
}

const writeHex = (buf: Uint8Array, off: number, hex: string): number => decodeHexAt(hex, 0, hex.length, buf, off)

const encoder = new TextEncoder()

const writeU32le = (buf: Uint8Array, v: number, at: number): void => {
  buf[at] = v & 0xff
  buf[at + 1] = (v >>> 8) & 0xff
  buf[at + 2] = (v >>> 16) & 0xff
  buf[at + 3] = (v >>> 24) & 0xff
}

/**
 * Parses text[start, end) (one line, no newline) into `out` and its template data into `tb`.
 * Returns undefined on success, or the reason the line is not an IMA entry. Works on indices into
 * the whole list so the hot loop slices only the strings it keeps.
 */
export const parseLineInto = (
  text: string,
  start: number,
  end: number,
  tb: TemplateBuffer,
  out: EntryFields,
  /** false: the caller checks column 2's hex itself (the hot loop compares it against the computed hash). */
  checkTemplateHashHex = true
): string | undefined => {
  const line = text
  let s1 = line.indexOf(" ", start)
  if (s1 >= end) s1 = -1
  let s2 = s1 < 0 ? -1 : line.indexOf(" ", s1 + 1)
  if (s2 >= end) s2 = -1
  let s3 = s2 < 0 ? -1 : line.indexOf(" ", s2 + 1)
  if (s3 >= end) s3 = -1
  if (s3 < 0) return "expected 4 fields: PCR, template hash, template name, template data"
  out.pcrStart = start
  out.pcrEnd = s1
  const thLen = s2 - s1 - 1
  if (thLen === 0 || (thLen & 1) !== 0 || thLen > 128) return `template hash '${line.slice(s1 + 1, s2)}' is not a hex digest`
  let bad = 0
  if (checkTemplateHashHex) for (let i = s1 + 1; i < s2; i++) bad |= hexVal(line.charCodeAt(i))
  if (bad < 0) return `template hash '${line.slice(s1 + 1, s2)}' is not hex`
  out.thStart = s1 + 1
  out.thEnd = s2
  const template = templateAt(line, s2 + 1, s3 - s2 - 1)
  if (template === undefined) return `no parser for template '${line.slice(s2 + 1, s3)}'`
  out.template = template
  const d0 = s3 + 1
  let d1 = line.indexOf(" ", d0)
  if (d1 >= end) d1 = -1
  if (d1 < 0) return `template ${template}: expected a digest and a name`
  let nameEnd = end
  out.extraHex = ""
  if (template === "ima-sig" || template === "ima-buf") {
    let d2 = line.indexOf(" ", d1 + 1)
    if (d2 >= end) d2 = -1
    // The kernel prints the separator even when the last field is empty.
    if (d2 < 0) return `template ${template}: expected 3 fields (digest, name, ${template === "ima-sig" ? "signature" : "buffer"})`
    nameEnd = d2
    out.extraHex = line.slice(d2 + 1, end)
  }
  out.nameStart = d1 + 1
  out.nameEnd = nameEnd
  // Bounded scans: indexOf would run on into the rest of the list when the digest has no ':'.
  const colon = indexIn(line, 58, d0, d1)
  let alg: string
  let hexAt: number
  if (colon < 0) {
    hexAt = d0
    alg = d1 - d0 === 40 ? "sha1" : d1 - d0 === 32 ? "md5" : ""
    if (alg === "") return `digest '${line.slice(d0, d1)}' has no algorithm and is not a sha1 or md5 digest`
  } else {
    alg = colon - d0 === 6 && isSha256At(line, d0) ? "sha256" : line.slice(d0, colon)
    hexAt = colon + 1
  }
  out.digestAlg = alg
  out.hexStart = hexAt
  out.hexEnd = d1
  const nameMax = (nameEnd - d1 - 1) * 3
  tb.ensure(alg.length + (d1 - hexAt) + nameMax + out.extraHex.length + 300)
  const buf = tb.buf
  let off = 0
  if (template === "ima") {
    out.digestStart = 0
    const n = decodeHexAt(line, hexAt, d1, buf, 0)
    if (n < 0) return badDigest(line, d0, d1, hexAt)
    out.digestLength = n
    off = n
    const nameLen = writeUtf8At(line, d1 + 1, nameEnd, buf, off)
    out.nameHash = lastNameHash
    if (nameLen > TCG_EVENT_NAME_LEN_MAX) return `name is longer than ${TCG_EVENT_NAME_LEN_MAX} bytes (template ima)`
    // Legacy "n" field: name, NUL, zero padding to TCG_EVENT_NAME_LEN_MAX + 1 bytes.
    buf.fill(0, off + nameLen, off + TCG_EVENT_NAME_LEN_MAX + 1)
    out.length = off + TCG_EVENT_NAME_LEN_MAX + 1
    out.extraStart = out.length
    out.extraLength = 0
    return undefined
  }
  // d-ng: u32 len ‖ alg ‖ ':' ‖ NUL ‖ digest
  off = 4
  off += writeUtf8(buf, off, alg)
  buf[off++] = 0x3a
  buf[off++] = 0
  out.digestStart = off
  const n = decodeHexAt(line, hexAt, d1, buf, off)
  if (n < 0) return badDigest(line, d0, d1, hexAt)
  out.digestLength = n
  off += n
  writeU32le(buf, off - 4, 0)
  // n-ng: u32 len ‖ name ‖ NUL
  const nameAt = off
  off += 4
  off += writeUtf8At(line, d1 + 1, nameEnd, buf, off)
  out.nameHash = lastNameHash
  buf[off++] = 0
  writeU32le(buf, off - nameAt - 4, nameAt)
  if (template === "ima-ng") {
    out.length = off
    out.extraStart = off
    out.extraLength = 0
    return undefined
  }
  // sig / buf: u32 len ‖ bytes (length 0 and no bytes when empty)
  const e = writeHex(buf, off + 4, out.extraHex)
  if (e < 0) return `${template === "ima-sig" ? "signature" : "buffer"} is not valid hex`
  writeU32le(buf, e, off)
  out.extraStart = off + 4
  out.extraLength = e
  out.length = off + 4 + e
  return undefined
}

/**
 * The template named by text[at, at + n): "ima", "ima-ng", "ima-sig" or "ima-buf". Character codes
 * instead of startsWith: a native call per candidate cost more than the rest of the line's parse.
 */
const templateAt = (text: string, at: number, n: number): TemplateName | undefined => {
  // "ima"
  if (n < 3 || text.charCodeAt(at) !== 105 || text.charCodeAt(at + 1) !== 109 || text.charCodeAt(at + 2) !== 97) return undefined
  if (n === 3) return "ima"
  if (text.charCodeAt(at + 3) !== 45) return undefined
  const a = text.charCodeAt(at + 4)
  const b = text.charCodeAt(at + 5)
  // "-ng"
  if (n === 6) return a === 110 && b === 103 ? "ima-ng" : undefined
  if (n !== 7) return undefined
  const c = text.charCodeAt(at + 6)
  // "-sig", "-buf"
  if (a === 115 && b === 105 && c === 103) return "ima-sig"
  if (a === 98 && b === 117 && c === 102) return "ima-buf"
  return undefined
}

/** text[at, at + 6) is "sha256". */
const isSha256At = (text: string, at: number): boolean =>
  text.charCodeAt(at) === 115 && text.charCodeAt(at + 1) === 104 && text.charCodeAt(at + 2) === 97 &&
  text.charCodeAt(at + 3) === 50 && text.charCodeAt(at + 4) === 53 && text.charCodeAt(at + 5) === 54

/** Position of char code c in text[a, b), or -1. */
const indexIn = (text: string, c: number, a: number, b: number): number => {
  for (let i = a; i < b; i++) if (text.charCodeAt(i) === c) return i
  return -1
}

/** Why text[d0, d1) did not decode: a second ':' is named as such (checked only here, off the hot path). */
const badDigest = (text: string, d0: number, d1: number, hexAt: number): string =>
  hexAt > d0 && indexIn(text, 58, hexAt, d1) >= 0
    ? `digest '${text.slice(d0, d1)}' has more than one ':'`
    : `digest '${text.slice(d0, d1)}' is not valid hex`

export const nameOf = (text: string, f: EntryFields): string => text.slice(f.nameStart, f.nameEnd)

export const digestHexOf = (text: string, f: EntryFields): string => text.slice(f.hexStart, f.hexEnd)

/** An entry as an immutable value, with a copy of its template data. */
export interface ImaEntry {
  readonly pcr: string
  readonly templateHash: string
  readonly template: TemplateName
  readonly digestAlg: string
  readonly digest: Uint8Array
  readonly name: string
  /** ima-sig signature or ima-buf buffer; empty when absent. */
  readonly extra: Uint8Array
  readonly templateData: Uint8Array
}

/** Parse one line (1-based `line` names it in the error). */
export const parseEntry = (text: string, line = 1): Either.Either<ImaEntry, ImaParseError> => {
  const tb = new TemplateBuffer()
  const f = emptyFields()
  const reason = parseLineInto(text, 0, text.length, tb, f)
  if (reason !== undefined) return Either.left(new ImaParseError({ line, reason }))
  const data = new Uint8Array(tb.buf.subarray(0, f.length))
  return Either.right({
    pcr: text.slice(f.pcrStart, f.pcrEnd),
    templateHash: text.slice(f.thStart, f.thEnd).toLowerCase(),
    template: f.template,
    digestAlg: f.digestAlg,
    digest: data.slice(f.digestStart, f.digestStart + f.digestLength),
    name: nameOf(text, f),
    extra: data.slice(f.extraStart, f.extraStart + f.extraLength),
    templateData: data
  })
}

/** Every non-empty line of a list; the first bad line fails. */
export const parseList = (text: string): Either.Either<Array<ImaEntry>, ImaParseError> => {
  const out: Array<ImaEntry> = []
  const lines = text.split("\n")
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i]!
    if (l === "") continue
    const r = parseEntry(l, i + 1)
    if (Either.isLeft(r)) return Either.left(r.left)
    out.push(r.right)
  }
  return Either.right(out)
}
