/**
 * One line of the ASCII IMA measurement list → its fields and the template data the kernel hashed
 * (tpm-facts.md §4.1–4.2, Keylime ast.py split rules). The hot path fills a reused scratch record
 * and a reused buffer; `parseEntry` wraps it for callers that want an immutable value.
 */
import { Data, Either } from "effect"

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
  buf: Buffer = Buffer.allocUnsafe(4096)
  ensure(n: number): void {
    if (n > this.buf.length) this.buf = Buffer.allocUnsafe(Math.max(n, this.buf.length * 2))
  }
}

/** Fields of one entry; mutated in place by `parseLineInto`. */
export interface EntryFields {
  pcr: string
  templateHash: string
  template: TemplateName
  digestAlg: string
  digestHex: string
  name: string
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
  pcr: "",
  templateHash: "",
  template: "ima-ng",
  digestAlg: "",
  digestHex: "",
  name: "",
  extraHex: "",
  length: 0,
  digestStart: 0,
  digestLength: 0,
  extraStart: 0,
  extraLength: 0
})

const templateOf = (s: string): TemplateName | undefined =>
  s === "ima-ng" ? s : s === "ima-sig" ? s : s === "ima-buf" ? s : s === "ima" ? s : undefined

/** Writes hex into buf at off; -1 unless every character was valid hex. */
const writeHex = (buf: Buffer, off: number, hex: string): number => {
  if ((hex.length & 1) !== 0) return -1
  const n = hex.length >> 1
  // Buffer#write stops at the first invalid pair, so a short count means bad input.
  return n === 0 ? 0 : buf.write(hex, off, n, "hex") === n ? n : -1
}

/**
 * Parses `line` (no trailing newline) into `out` and its template data into `tb`.
 * Returns undefined on success, or the reason the line is not an IMA entry.
 */
export const parseLineInto = (line: string, tb: TemplateBuffer, out: EntryFields): string | undefined => {
  const s1 = line.indexOf(" ")
  const s2 = s1 < 0 ? -1 : line.indexOf(" ", s1 + 1)
  const s3 = s2 < 0 ? -1 : line.indexOf(" ", s2 + 1)
  if (s3 < 0) return "expected 4 fields: PCR, template hash, template name, template data"
  out.pcr = line.slice(0, s1)
  const th = line.slice(s1 + 1, s2)
  if (th.length === 0 || (th.length & 1) !== 0 || !/^[0-9a-fA-F]+$/.test(th)) return `template hash '${th}' is not hex`
  out.templateHash = th
  const template = templateOf(line.slice(s2 + 1, s3))
  if (template === undefined) return `no parser for template '${line.slice(s2 + 1, s3)}'`
  out.template = template
  const d0 = s3 + 1
  const d1 = line.indexOf(" ", d0)
  if (d1 < 0) return `template ${template}: expected a digest and a name`
  let nameEnd = line.length
  out.extraHex = ""
  if (template === "ima-sig" || template === "ima-buf") {
    const d2 = line.indexOf(" ", d1 + 1)
    // The kernel prints the separator even when the last field is empty.
    if (d2 < 0) return `template ${template}: expected 3 fields (digest, name, ${template === "ima-sig" ? "signature" : "buffer"})`
    nameEnd = d2
    out.extraHex = line.slice(d2 + 1)
  }
  const digestTok = line.slice(d0, d1)
  out.name = line.slice(d1 + 1, nameEnd)
  const colon = digestTok.indexOf(":")
  let alg: string
  let hex: string
  if (colon < 0) {
    hex = digestTok
    alg = hex.length === 40 ? "sha1" : hex.length === 32 ? "md5" : ""
    if (alg === "") return `digest '${digestTok}' has no algorithm and is not a sha1 or md5 digest`
  } else {
    if (digestTok.indexOf(":", colon + 1) >= 0) return `digest '${digestTok}' has more than one ':'`
    alg = digestTok.slice(0, colon)
    hex = digestTok.slice(colon + 1)
  }
  out.digestAlg = alg
  out.digestHex = hex
  const nameMax = out.name.length * 3
  tb.ensure(alg.length + hex.length + nameMax + out.extraHex.length + 300)
  const buf = tb.buf
  let off = 0
  if (template === "ima") {
    out.digestStart = 0
    const n = writeHex(buf, 0, hex)
    if (n < 0) return `digest '${digestTok}' is not valid hex`
    out.digestLength = n
    off = n
    const nameLen = buf.write(out.name, off, "utf8")
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
  off += buf.write(alg, off, "latin1")
  buf[off++] = 0x3a
  buf[off++] = 0
  out.digestStart = off
  const n = writeHex(buf, off, hex)
  if (n < 0) return `digest '${digestTok}' is not valid hex`
  out.digestLength = n
  off += n
  buf.writeUInt32LE(off - 4, 0)
  // n-ng: u32 len ‖ name ‖ NUL
  const nameAt = off
  off += 4
  off += buf.write(out.name, off, "utf8")
  buf[off++] = 0
  buf.writeUInt32LE(off - nameAt - 4, nameAt)
  if (template === "ima-ng") {
    out.length = off
    out.extraStart = off
    out.extraLength = 0
    return undefined
  }
  // sig / buf: u32 len ‖ bytes (length 0 and no bytes when empty)
  const e = writeHex(buf, off + 4, out.extraHex)
  if (e < 0) return `${template === "ima-sig" ? "signature" : "buffer"} is not valid hex`
  buf.writeUInt32LE(e, off)
  out.extraStart = off + 4
  out.extraLength = e
  out.length = off + 4 + e
  return undefined
}

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
  const reason = parseLineInto(text, tb, f)
  if (reason !== undefined) return Either.left(new ImaParseError({ line, reason }))
  const data = new Uint8Array(tb.buf.subarray(0, f.length))
  return Either.right({
    pcr: f.pcr,
    templateHash: f.templateHash.toLowerCase(),
    template: f.template,
    digestAlg: f.digestAlg,
    digest: data.slice(f.digestStart, f.digestStart + f.digestLength),
    name: f.name,
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
