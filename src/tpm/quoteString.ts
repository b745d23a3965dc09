/**
 * Keylime's quote string: "r" + b64(TPMS_ATTEST) + ":" + b64(TPMT_SIGNATURE) + ":" + b64(PCR blob)
 * (keylime-wire.md §6, push-model.md §4.6). "r" means raw; Keylime raises on anything else, and
 * both the identity and the integrity quote carry all three parts (identity quotes select PCR 16),
 * so the 2-part form is not accepted. API 1.0's zlib-compressed parts are not supported.
 */
import { Either } from "effect"
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

/** Base64 decode without a regex pass: node skips invalid characters, so a short result means a bad part. */
const decodePart = (s: string, start: number, end: number): Uint8Array | undefined => {
  const len = end - start
  if (len === 0 || len % 4 === 1) return undefined
  let pad = 0
  if (s.charCodeAt(end - 1) === 61) pad++
  if (len > 1 && s.charCodeAt(end - 2) === 61) pad++
  const expected = Math.floor((len * 3) / 4) - pad
  const b = Buffer.from(start === 0 && end === s.length ? s : s.slice(start, end), "base64")
  // A plain Uint8Array view (no copy) over the decoded bytes; it may view node's pool, fine for read-only parts.
  return b.length === expected ? new Uint8Array(b.buffer, b.byteOffset, b.length) : undefined
}

export const decodeQuoteString = (s: string): Either.Either<QuoteParts, TpmParseError> => {
  if (s.length === 0 || s.charCodeAt(0) !== 114 /* r */) return fail(0, `quote must start with "r" (raw), got ${JSON.stringify(s.slice(0, 1))}`)
  const c1 = s.indexOf(":", 1)
  const c2 = c1 < 0 ? -1 : s.indexOf(":", c1 + 1)
  if (c1 < 0 || c2 < 0 || s.indexOf(":", c2 + 1) >= 0) return fail(1, `expected 3 ":"-separated parts, got ${s.slice(1).split(":").length}`)
  const attest = decodePart(s, 1, c1)
  if (attest === undefined) return fail(1, "part 1 (TPMS_ATTEST) is not base64")
  const signature = decodePart(s, c1 + 1, c2)
  if (signature === undefined) return fail(c1 + 1, "part 2 (TPMT_SIGNATURE) is not base64")
  const pcrBlob = decodePart(s, c2 + 1, s.length)
  if (pcrBlob === undefined) return fail(c2 + 1, "part 3 (PCR blob) is not base64")
  return Either.right({ attest, signature, pcrBlob })
}
