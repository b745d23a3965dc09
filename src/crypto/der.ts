/**
 * A minimal bounds-checked DER reader for the few certificate fields read on hot paths (issuer
 * name bytes, key identifiers, basic constraints). pkijs parses a whole certificate in ~7 ms;
 * these walks take microseconds. Every read fails with a typed error, never a RangeError.
 */
import { Either } from "effect"
import { PkiError } from "./pkiError.js"

export interface Tlv {
  readonly tag: number
  /** Offset of the tag byte. */
  readonly start: number
  /** Offset of the contents. */
  readonly body: number
  /** Offset just past the contents. */
  readonly end: number
}

const bad = (what: string, at: number) => Either.left(new PkiError({ reason: `malformed DER: ${what} at offset ${at}` }))

/** One TLV at `at`, inside `limit`. Only single-byte tags (all X.509 needs). */
export const readTlv = (b: Uint8Array, at: number, limit = b.length): Either.Either<Tlv, PkiError> => {
  if (at + 2 > limit) return bad("truncated header", at)
  const tag = b[at]!
  if ((tag & 0x1f) === 0x1f) return bad("multi-byte tag", at)
  let len = b[at + 1]!
  let body = at + 2
  if (len & 0x80) {
    const n = len & 0x7f
    if (n === 0 || n > 4 || body + n > limit) return bad("bad length", at)
    len = 0
    for (let i = 0; i < n; i++) len = len * 256 + b[body + i]!
    body += n
  }
  if (body + len > limit) return bad("contents past the end", at)
  return Either.right({ tag, start: at, body, end: body + len })
}

/** The TLVs directly inside a constructed TLV. */
export const children = (b: Uint8Array, parent: Tlv): Either.Either<ReadonlyArray<Tlv>, PkiError> => {
  const out: Array<Tlv> = []
  for (let at = parent.body; at < parent.end;) {
    const t = readTlv(b, at, parent.end)
    if (Either.isLeft(t)) return Either.left(t.left)
    out.push(t.right)
    at = t.right.end
  }
  return Either.right(out)
}

export interface CertificateFields {
  readonly issuer: Uint8Array
  readonly subject: Uint8Array
  readonly spki: Uint8Array
  /** OID (dotted) → { critical, value: contents of extnValue }. */
  readonly extensions: ReadonlyMap<string, { readonly critical: boolean; readonly value: Uint8Array }>
}

export const oidToString = (b: Uint8Array): string => {
  if (b.length === 0) return ""
  const parts = [Math.min(2, Math.floor(b[0]! / 40)), b[0]! - Math.min(2, Math.floor(b[0]! / 40)) * 40]
  let v = 0
  for (let i = 1; i < b.length; i++) {
    v = v * 128 + (b[i]! & 0x7f)
    if (!(b[i]! & 0x80)) {
      parts.push(v)
      v = 0
    }
  }
  return parts.join(".")
}

const SEQUENCE = 0x30

/** issuer, subject, SPKI (whole TLVs) and extensions of a DER certificate. */
export const certificateFields = (der: Uint8Array): Either.Either<CertificateFields, PkiError> =>
  Either.gen(function*() {
    const cert = yield* readTlv(der, 0)
    if (cert.tag !== SEQUENCE) return yield* bad("certificate is not a SEQUENCE", 0)
    const [tbs] = yield* children(der, cert)
    if (tbs === undefined || tbs.tag !== SEQUENCE) return yield* bad("no tbsCertificate", cert.body)
    const fields = yield* children(der, tbs)
    const rest = fields[0]?.tag === 0xa0 ? fields.slice(1) : fields // [0] version is optional
    const [, , issuer, , subject, spki, ...tail] = rest
    if (issuer === undefined || subject === undefined || spki === undefined) return yield* bad("short tbsCertificate", tbs.body)
    const extensions = new Map<string, { critical: boolean; value: Uint8Array }>()
    const extsWrapper = tail.find((t) => t.tag === 0xa3)
    if (extsWrapper !== undefined) {
      const [seq] = yield* children(der, extsWrapper)
      if (seq === undefined) return yield* bad("empty extensions", extsWrapper.body)
      for (const ext of yield* children(der, seq)) {
        const parts = yield* children(der, ext)
        const oid = parts[0]
        const value = parts[parts.length - 1]
        if (oid === undefined || oid.tag !== 0x06 || value === undefined || value.tag !== 0x04) return yield* bad("bad extension", ext.start)
        const critical = parts.length === 3 && parts[1]!.tag === 0x01 && der[parts[1]!.body] !== 0
        extensions.set(oidToString(der.subarray(oid.body, oid.end)), { critical, value: der.subarray(value.body, value.end) })
      }
    }
    return {
      issuer: der.subarray(issuer.start, issuer.end),
      subject: der.subarray(subject.start, subject.end),
      spki: der.subarray(spki.start, spki.end),
      extensions
    }
  })

/** basicConstraints pathLenConstraint, undefined when absent. */
export const pathLenConstraint = (der: Uint8Array): Either.Either<number | undefined, PkiError> =>
  Either.gen(function*() {
    const bc = (yield* certificateFields(der)).extensions.get("2.5.29.19")
    if (bc === undefined) return undefined
    const seq = yield* readTlv(bc.value, 0)
    const int = (yield* children(bc.value, seq)).find((t) => t.tag === 0x02)
    if (int === undefined) return undefined
    let n = 0
    for (let i = int.body; i < int.end; i++) n = n * 256 + bc.value[i]!
    return n
  })

/** The subjectPublicKey BIT STRING contents (without the unused-bits byte) of an SPKI. */
export const subjectPublicKeyBits = (spki: Uint8Array): Either.Either<Uint8Array, PkiError> =>
  Either.gen(function*() {
    const seq = yield* readTlv(spki, 0)
    const bits = (yield* children(spki, seq))[1]
    if (bits === undefined || bits.tag !== 0x03 || bits.end <= bits.body) return yield* bad("SPKI without a BIT STRING", seq.body)
    return spki.subarray(bits.body + 1, bits.end)
  })

/** subjectKeyIdentifier contents, undefined when absent. */
export const subjectKeyIdentifier = (der: Uint8Array): Either.Either<Uint8Array | undefined, PkiError> =>
  Either.gen(function*() {
    const ski = (yield* certificateFields(der)).extensions.get("2.5.29.14")
    if (ski === undefined) return undefined
    const os = yield* readTlv(ski.value, 0)
    return ski.value.subarray(os.body, os.end)
  })
