/**
 * Byte helpers for TPM wire types: a bounds-checked cursor `Reader`, a growable `Writer`,
 * comparison, hex and base64.
 *
 * The Reader throws an internal `ReadFailure` on overrun; `parseWith` is the single place that
 * catches it and turns it into a `TpmParseError`, so no exception escapes a public parse function
 * and the hot path pays no per-read allocation.
 */
import { Either } from "effect"
import { base64Bytes, concat, hexBytes, toBase64 as base64Of, toHex as hexOf } from "../crypto/encoding.js"
import { timingSafeEqual } from "../crypto/port.js"
import { TpmParseError } from "./errors.js"

/** Internal: thrown by Reader, caught by parseWith. Never escapes a public function. */
class ReadFailure {
  constructor(
    readonly structure: string,
    readonly offset: number,
    readonly message: string
  ) {}
}

const be32 = (d: Uint8Array, at: number): number => d[at]! * 0x1000000 + ((d[at + 1]! << 16) | (d[at + 2]! << 8) | d[at + 3]!)
const le32 = (d: Uint8Array, at: number): number => d[at + 3]! * 0x1000000 + ((d[at + 2]! << 16) | (d[at + 1]! << 8) | d[at]!)

export class Reader {
  offset: number
  /** Structure being parsed, named in failures; parse functions set it as they descend. */
  structure: string

  constructor(
    readonly data: Uint8Array,
    structure = "bytes",
    offset = 0
  ) {
    this.offset = offset
    this.structure = structure
  }

  get remaining(): number {
    return this.data.length - this.offset
  }

  /** Fails the current parse with a message (throws the internal failure caught by parseWith). */
  fail(message: string, structure: string = this.structure, offset: number = this.offset): never {
    throw new ReadFailure(structure, offset, message)
  }

  private need(n: number, structure: string | undefined): number {
    const at = this.offset
    if (n < 0 || at + n > this.data.length) {
      this.fail(`needs ${n} bytes, ${this.data.length - at} left`, structure ?? this.structure, at)
    }
    this.offset = at + n
    return at
  }

  // Plain index arithmetic instead of a DataView: a Reader is made per structure on the quote
  // hot path, and a DataView per Reader costs more than the reads themselves.
  u8(structure?: string): number {
    return this.data[this.need(1, structure)]!
  }
  u16(structure?: string): number {
    const d = this.data
    const at = this.need(2, structure)
    return (d[at]! << 8) | d[at + 1]!
  }
  u32(structure?: string): number {
    return be32(this.data, this.need(4, structure))
  }
  u64(structure?: string): bigint {
    const at = this.need(8, structure)
    return (BigInt(be32(this.data, at)) << 32n) | BigInt(be32(this.data, at + 4))
  }
  u16le(structure?: string): number {
    const d = this.data
    const at = this.need(2, structure)
    return d[at]! | (d[at + 1]! << 8)
  }
  u32le(structure?: string): number {
    return le32(this.data, this.need(4, structure))
  }
  u64le(structure?: string): bigint {
    const at = this.need(8, structure)
    return (BigInt(le32(this.data, at + 4)) << 32n) | BigInt(le32(this.data, at))
  }

  /** A view (no copy) of the next n bytes. */
  bytes(n: number, structure?: string): Uint8Array {
    const at = this.need(n, structure)
    return this.data.subarray(at, at + n)
  }

  /** Skips n bytes (bounds-checked). */
  skip(n: number, structure?: string): void {
    this.need(n, structure)
  }

  /** A TPM2B: u16 size then that many bytes (a view). */
  tpm2b(structure?: string): Uint8Array {
    const size = this.u16(structure)
    return this.bytes(size, structure)
  }

  /** Fails unless every byte was consumed. */
  end(structure?: string): void {
    if (this.offset !== this.data.length) {
      this.fail(`${this.data.length - this.offset} trailing bytes`, structure ?? this.structure)
    }
  }
}

/** Runs a parse over `data`; overruns and `reader.fail` become a TpmParseError. */
export const parseWith = <A>(
  structure: string,
  data: Uint8Array,
  f: (r: Reader) => A
): Either.Either<A, TpmParseError> => {
  const r = new Reader(data, structure)
  try {
    return Either.right(f(r))
  } catch (e) {
    if (e instanceof ReadFailure) {
      return Either.left(new TpmParseError({ structure: e.structure, offset: e.offset, message: e.message }))
    }
    return Either.left(new TpmParseError({ structure: r.structure, offset: r.offset, message: String(e) }))
  }
}

/** Reads one whole structure: `read` must consume every byte, else a "trailing bytes" error. */
export const parseWhole = <A>(structure: string, data: Uint8Array, read: (r: Reader) => A): Either.Either<A, TpmParseError> =>
  parseWith(structure, data, (r) => {
    const a = read(r)
    r.end()
    return a
  })

/** Same as parseWith but for a reader already positioned inside a larger buffer. */
export const parseAt = <A>(r: Reader, f: (r: Reader) => A): Either.Either<A, TpmParseError> => {
  try {
    return Either.right(f(r))
  } catch (e) {
    if (e instanceof ReadFailure) {
      return Either.left(new TpmParseError({ structure: e.structure, offset: e.offset, message: e.message }))
    }
    return Either.left(new TpmParseError({ structure: r.structure, offset: r.offset, message: String(e) }))
  }
}

/** Growable big/little-endian writer. */
export class Writer {
  private buf: Uint8Array
  private view: DataView
  length = 0

  constructor(initial = 256) {
    this.buf = new Uint8Array(initial)
    this.view = new DataView(this.buf.buffer)
  }

  private ensure(n: number): number {
    const at = this.length
    if (at + n > this.buf.length) {
      let size = this.buf.length * 2
      while (size < at + n) size *= 2
      const next = new Uint8Array(size)
      next.set(this.buf.subarray(0, at))
      this.buf = next
      this.view = new DataView(next.buffer)
    }
    this.length = at + n
    return at
  }

  u8(v: number): this {
    const at = this.ensure(1)
    this.view.setUint8(at, v)
    return this
  }
  u16(v: number): this {
    const at = this.ensure(2)
    this.view.setUint16(at, v, false)
    return this
  }
  u32(v: number): this {
    const at = this.ensure(4)
    this.view.setUint32(at, v, false)
    return this
  }
  u64(v: bigint): this {
    const at = this.ensure(8)
    this.view.setBigUint64(at, v, false)
    return this
  }
  u16le(v: number): this {
    const at = this.ensure(2)
    this.view.setUint16(at, v, true)
    return this
  }
  u32le(v: number): this {
    const at = this.ensure(4)
    this.view.setUint32(at, v, true)
    return this
  }
  u64le(v: bigint): this {
    const at = this.ensure(8)
    this.view.setBigUint64(at, v, true)
    return this
  }
  bytes(b: Uint8Array): this {
    const at = this.ensure(b.length) // before reading this.buf: ensure may replace it
    this.buf.set(b, at)
    return this
  }
  /** u16 size ‖ bytes. */
  tpm2b(b: Uint8Array): this {
    return this.u16(b.length).bytes(b)
  }
  /** A copy of what was written. */
  finish(): Uint8Array {
    return this.buf.slice(0, this.length)
  }
}

export const concatBytes: (...parts: ReadonlyArray<Uint8Array>) => Uint8Array = concat

/** Constant-time for equal lengths (secrets, HMACs, nonces); lengths are not secret. */
export const equalBytes = (a: Uint8Array, b: Uint8Array): boolean => timingSafeEqual(a, b)

/** Plain comparison for public data where timing does not matter. */
export const sameBytes = (a: Uint8Array, b: Uint8Array): boolean => {
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}

export const toHex = (b: Uint8Array): string => hexOf(b)

/** Decodes hex (optional 0x prefix); undefined when not valid hex. */
export const fromHex = (s: string): Uint8Array | undefined => {
  const h = s.startsWith("0x") || s.startsWith("0X") ? s.slice(2) : s
  if (h.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(h)) return undefined
  return hexBytes(h)
}

export const toBase64 = (b: Uint8Array): string => base64Of(b)

/** Strict base64 (standard alphabet, padding optional); undefined when malformed. */
export const fromBase64 = (s: string): Uint8Array | undefined => {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(s) || s.length % 4 === 1) return undefined
  return base64Bytes(s)
}

/** A Uint8Array that owns exactly its bytes (a Buffer is a view over a pooled slab). */
export const u8 = (b: Uint8Array): Uint8Array => new Uint8Array(b)
