/**
 * Keylime's quote string: "r" + b64(TPMS_ATTEST) + ":" + b64(TPMT_SIGNATURE) + ":" + b64(PCR blob)
 * (keylime-wire.md §6, push-model.md §4.6). "r" means raw; Keylime raises on anything else, and
 * both the identity and the integrity quote carry all three parts (identity quotes select PCR 16),
 * so the 2-part form is not accepted. API 1.0's zlib-compressed parts are not supported.
 */
import { Either } from "effect"
import { allocBytes, decodeBase64Into } from "../crypto/encoding.js"
import { toBase64 } from "./bytes.js"
import { TpmParseError } from "./errors.js"

export interface QuoteParts {
  /** TPMS_ATTEST, no size prefix. */
  readonly attest: Uint8Array
  /** TPMT_SIGNATURE. */
  readonly signature: Uint8Array
  /** tpm2-tools serialized PCR blob. */
  readonly pcrBlob: Uint8Array
}

export const encodeQuoteString = (parts: QuoteParts): string =>
  `r${toBase64(parts.attest)}:${toBase64(parts.signature)}:${toBase64(parts.pcrBlob)}`

const fail = (offset: number, message: string) =>
  Either.left(new TpmParseError({ structure: "quote string", offset, message }))

/** Decoded size of base64 s[start, end), or -1 when no base64 has that length. */
const decodedLength = (s: string, start: number, end: number): number => {
  const len = end - start
  if (len === 0 || len % 4 === 1) return -1
  let pad = 0
  if (s.charCodeAt(end - 1) === 61) pad++
  if (len > 1 && s.charCodeAt(end - 2) === 61) pad++
  return Math.floor((len * 3) / 4) - pad
}

/**
 * Base64 decode of s[start, end) into out at `at`, without a regex pass: node skips invalid
 * characters, so a short count means a bad part. Returns a plain Uint8Array view (no copy).
 */
const decodePart = (s: string, start: number, end: number, out: Uint8Array, at: number, n: number): Uint8Array | undefined =>
  n > 0 && decodeBase64Into(s, start, end, out, at, n) === n ? new Uint8Array(out.buffer, out.byteOffset + at, n) : undefined

export const decodeQuoteString = (s: string): Either.Either<QuoteParts, TpmParseError> => {
  if (s.length === 0 || s.charCodeAt(0) !== 114 /* r */) return fail(0, `quote must start with "r" (raw), got ${JSON.stringify(s.slice(0, 1))}`)
  const c1 = s.indexOf(":", 1)
  const c2 = c1 < 0 ? -1 : s.indexOf(":", c1 + 1)
  if (c1 < 0 || c2 < 0 || s.indexOf(":", c2 + 1) >= 0) return fail(1, `expected 3 ":"-separated parts, got ${s.slice(1).split(":").length}`)
  const n1 = decodedLength(s, 1, c1)
  const n2 = decodedLength(s, c1 + 1, c2)
  const n3 = decodedLength(s, c2 + 1, s.length)
  // One buffer for the three parts (from node's pool when small): a quote is decoded on every attestation.
  const out = allocBytes(Math.max(n1, 0) + Math.max(n2, 0) + Math.max(n3, 0))
  const attest = decodePart(s, 1, c1, out, 0, n1)
  if (attest === undefined) return fail(1, "part 1 (TPMS_ATTEST) is not base64")
  const signature = decodePart(s, c1 + 1, c2, out, n1, n2)
  if (signature === undefined) return fail(c1 + 1, "part 2 (TPMT_SIGNATURE) is not base64")
  const pcrBlob = decodePart(s, c2 + 1, s.length, out, n1 + n2, n3)
  if (pcrBlob === undefined) return fail(c2 + 1, "part 3 (PCR blob) is not base64")
  return Either.right({ attest, signature, pcrBlob })
}
