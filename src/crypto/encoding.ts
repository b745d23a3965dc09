/**
 * Bytes ⇄ text for the engines: hex, base64, base64url, latin1 and UTF-8, wherever JavaScript runs.
 * On Node (and runtimes with a global `Buffer`) these are Buffer's codecs, which the hot paths were
 * measured with; elsewhere plain loops that decode exactly as Buffer does, leniency included
 * (test/crypto/encoding.test.ts compares both on random input), so a verdict never depends on the runtime.
 * Callers that need strict input check it first (src/tpm/bytes.ts `fromHex`/`fromBase64`).
 */

interface BufferLike {
  from(data: ArrayBufferLike, byteOffset: number, length: number): { toString(encoding: string): string }
  from(data: string, encoding: string): Uint8Array
  allocUnsafe(n: number): Uint8Array & { write(s: string, offset: number, length: number, encoding: string): number }
}

// Read from globalThis, never imported: the engines bundle for browsers without a Node built-in.
const NodeBuffer: BufferLike | undefined = (globalThis as { readonly Buffer?: BufferLike }).Buffer

const view = (b: Uint8Array) => NodeBuffer!.from(b.buffer, b.byteOffset, b.byteLength)
/** A Uint8Array that owns exactly its bytes (a Buffer result is a view over a pooled slab). */
const own = (b: Uint8Array): Uint8Array => new Uint8Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength))

// ---------------------------------------------------------------------------------------------
// portable codecs (exported for the comparison test)

const HEX = "0123456789abcdef"
const HEX_PAIRS: ReadonlyArray<string> = Array.from({ length: 256 }, (_, i) => HEX[i >> 4]! + HEX[i & 15]!)

const nibbleOf = (c: number): number =>
  c >= 48 && c <= 57 ? c - 48 : c >= 97 && c <= 102 ? c - 87 : c >= 65 && c <= 70 ? c - 55 : -1

export const portableToHex = (b: Uint8Array): string => {
  let s = ""
  for (let i = 0; i < b.length; i++) s += HEX_PAIRS[b[i]!]!
  return s
}

/** As Buffer: pairs are decoded until the first that is not hex; an odd last digit is dropped. */
export const portableFromHex = (s: string): Uint8Array => {
  const out = new Uint8Array(s.length >> 1)
  let n = 0
  for (; n < out.length; n++) {
    const hi = nibbleOf(s.charCodeAt(2 * n))
    const lo = nibbleOf(s.charCodeAt(2 * n + 1))
    if (hi < 0 || lo < 0) break
    out[n] = (hi << 4) | lo
  }
  return n === out.length ? out : out.slice(0, n)
}

const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
const B64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
/** Both alphabets decode, as Buffer's base64 and base64url decoders both accept either. */
const B64_VALUE = new Int8Array(128).fill(-1)
for (let i = 0; i < 64; i++) {
  B64_VALUE[B64.charCodeAt(i)] = i
  B64_VALUE[B64URL.charCodeAt(i)] = i
}

const encode64 = (b: Uint8Array, alphabet: string, pad: boolean): string => {
  let s = ""
  let i = 0
  for (; i + 2 < b.length; i += 3) {
    const v = (b[i]! << 16) | (b[i + 1]! << 8) | b[i + 2]!
    s += alphabet[v >> 18]! + alphabet[(v >> 12) & 63]! + alphabet[(v >> 6) & 63]! + alphabet[v & 63]!
  }
  const rest = b.length - i
  if (rest === 1) {
    const v = b[i]! << 16
    s += alphabet[v >> 18]! + alphabet[(v >> 12) & 63]! + (pad ? "==" : "")
  } else if (rest === 2) {
    const v = (b[i]! << 16) | (b[i + 1]! << 8)
    s += alphabet[v >> 18]! + alphabet[(v >> 12) & 63]! + alphabet[(v >> 6) & 63]! + (pad ? "=" : "")
  }
  return s
}

export const portableToBase64 = (b: Uint8Array): string => encode64(b, B64, true)
export const portableToBase64Url = (b: Uint8Array): string => encode64(b, B64URL, false)

/**
 * As Buffer: characters outside both alphabets are skipped, decoding stops at the first `=`, and a
 * last group of 2 or 3 characters gives 1 or 2 bytes (a lone last character gives none).
 */
export const portableFromBase64 = (s: string): Uint8Array => {
  const out = new Uint8Array(Math.ceil((s.length * 3) / 4))
  let n = 0
  let acc = 0
  let bits = 0
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c === 61) break
    const v = c < 128 ? B64_VALUE[c]! : -1
    if (v < 0) continue
    acc = ((acc << 6) | v) & 0xffffff
    bits += 6
    if (bits >= 8) {
      bits -= 8
      out[n++] = (acc >> bits) & 0xff
    }
  }
  return out.slice(0, n)
}

export const portableLatin1 = (b: Uint8Array): string => {
  let s = ""
  for (let i = 0; i < b.length; i += 4096) s += String.fromCharCode.apply(null, b.subarray(i, i + 4096) as unknown as Array<number>)
  return s
}

export const portableFromLatin1 = (s: string): Uint8Array => {
  const out = new Uint8Array(s.length)
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i) & 0xff
  return out
}

// ---------------------------------------------------------------------------------------------
// what the engines call

export const toHex: (b: Uint8Array) => string = NodeBuffer ? (b) => view(b).toString("hex") : portableToHex
/** Lenient hex (see portableFromHex); validate first where input must be strict. */
export const hexBytes: (s: string) => Uint8Array = NodeBuffer ? (s) => own(NodeBuffer.from(s, "hex")) : portableFromHex
export const toBase64: (b: Uint8Array) => string = NodeBuffer ? (b) => view(b).toString("base64") : portableToBase64
export const toBase64Url: (b: Uint8Array) => string = NodeBuffer ? (b) => view(b).toString("base64url") : portableToBase64Url
/** Lenient base64 or base64url (see portableFromBase64); validate first where input must be strict. */
export const base64Bytes: (s: string) => Uint8Array = NodeBuffer ? (s) => own(NodeBuffer.from(s, "base64")) : portableFromBase64
/** One character per byte (char codes 0–255). */
export const latin1: (b: Uint8Array) => string = NodeBuffer ? (b) => view(b).toString("latin1") : portableLatin1
export const latin1Bytes: (s: string) => Uint8Array = NodeBuffer ? (s) => own(NodeBuffer.from(s, "latin1")) : portableFromLatin1

/**
 * n bytes, contents unspecified, for a hot path that fills them: on node from Buffer's pool (a small
 * Uint8Array with its own ArrayBuffer costs more than the parse that fills it).
 */
export const allocBytes: (n: number) => Uint8Array = NodeBuffer ? (n) => NodeBuffer.allocUnsafe(n) : (n) => new Uint8Array(n)

/**
 * Decodes base64 s[start, end) into out[at, at + n) and says how many bytes it wrote (at most n);
 * lenient as base64Bytes. `out` must come from allocBytes.
 */
export const decodeBase64Into: (s: string, start: number, end: number, out: Uint8Array, at: number, n: number) => number = NodeBuffer
  ? (s, start, end, out, at, n) => (out as ReturnType<BufferLike["allocUnsafe"]>).write(s.slice(start, end), at, n, "base64")
  : (s, start, end, out, at, n) => {
    const b = portableFromBase64(s.slice(start, end)).subarray(0, n)
    out.set(b, at)
    return b.length
  }

const encoder = new TextEncoder()
// ignoreBOM: a leading BOM is kept as U+FEFF, as Buffer keeps it
const decoder = new TextDecoder("utf-8", { ignoreBOM: true })
const strictDecoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true })

export const utf8Bytes = (s: string): Uint8Array => encoder.encode(s)
/** UTF-8 text; invalid sequences become U+FFFD. */
export const utf8 = (b: Uint8Array): string => decoder.decode(b)

/** UTF-8 text, or undefined when the bytes are not UTF-8. */
export const strictUtf8 = (b: Uint8Array): string | undefined => {
  try {
    return strictDecoder.decode(b)
  } catch {
    return undefined
  }
}

export const isUtf8 = (b: Uint8Array): boolean => strictUtf8(b) !== undefined

export const concat = (...parts: ReadonlyArray<Uint8Array>): Uint8Array => {
  let n = 0
  for (const p of parts) n += p.length
  const out = new Uint8Array(n)
  let at = 0
  for (const p of parts) {
    out.set(p, at)
    at += p.length
  }
  return out
}
