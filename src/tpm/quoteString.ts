/**
 * Keylime's quote string: "r" + b64(TPMS_ATTEST) + ":" + b64(TPMT_SIGNATURE) + ":" + b64(PCR blob)
 * (keylime-wire.md §6, push-model.md §4.6). "r" means raw; Keylime raises on anything else, and
 * both the identity and the integrity quote carry all three parts (identity quotes select PCR 16),
 * so the 2-part form is not accepted. API 1.0's zlib-compressed parts are not supported.
 */
import { Either } from "effect"
import { fromBase64, toBase64 } from "./bytes.js"
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

export const decodeQuoteString = (s: string): Either.Either<QuoteParts, TpmParseError> => {
  if (s.length === 0 || s[0] !== "r") return fail(0, `quote must start with "r" (raw), got ${JSON.stringify(s.slice(0, 1))}`)
  const parts = s.slice(1).split(":")
  if (parts.length !== 3) return fail(1, `expected 3 ":"-separated parts, got ${parts.length}`)
  const out: Array<Uint8Array> = []
  let offset = 1
  for (const p of parts) {
    const b = p.length === 0 ? undefined : fromBase64(p)
    if (b === undefined) return fail(offset, `part ${out.length + 1} is not base64`)
    out.push(b)
    offset += p.length + 1
  }
  return Either.right({ attest: out[0]!, signature: out[1]!, pcrBlob: out[2]! })
}
