/** PEM armour: DER ⇄ base64 text blocks (RFC 7468). Portable: the engines read PEM keys and certificates with it. */
import { base64Bytes, latin1, toBase64 } from "./encoding.js"

export interface PemBlock {
  readonly label: string
  readonly der: Uint8Array
}

/** DER → PEM with 64-character lines, as openssl writes it. */
export const toPem = (der: Uint8Array, label = "CERTIFICATE"): string => {
  const b64 = toBase64(der)
  const lines: Array<string> = []
  for (let i = 0; i < b64.length; i += 64) lines.push(b64.slice(i, i + 64))
  return `-----BEGIN ${label}-----\n${lines.join("\n")}\n-----END ${label}-----\n`
}

const BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----([\s\S]*?)-----END \1-----/g
const BASE64_BODY = /^[A-Za-z0-9+/=\s]*$/

/**
 * Every PEM block in `text`, in order. Text between blocks (openssl's "subject=" headers) is
 * ignored; a block whose body is not base64 is skipped rather than decoded to garbage.
 */
export const fromPem = (text: string): ReadonlyArray<PemBlock> => {
  const out: Array<PemBlock> = []
  for (const m of text.matchAll(BLOCK)) {
    const body = m[2] ?? ""
    if (!BASE64_BODY.test(body)) continue
    out.push({ label: m[1] ?? "", der: base64Bytes(body.replace(/\s+/g, "")) })
  }
  return out
}

/** True when the bytes look like PEM text rather than DER (DER certificates start with 0x30). */
export const isPemText = (bytes: Uint8Array): boolean =>
  latin1(bytes.subarray(0, Math.min(bytes.length, 4096))).includes("-----BEGIN ")
