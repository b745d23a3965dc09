/**
 * Branded wire values shared by every component: agent ids, base64 byte strings, nonces, PEM text.
 * Messages say what is wrong in words a person can act on; the HTTP layer prefixes the field name.
 */
import { ParseResult, Schema } from "effect"

/** Letters, digits, `-`, `_` and `.`: what Keylime's validators accept, and what fits a URL path unescaped. */
const AGENT_ID = /^[A-Za-z0-9._-]{1,255}$/

/** The rule an agent id follows, in words (every refusal of an id says it). */
export const AGENT_ID_RULE = "must be 1-255 characters of letters, digits, '-', '_' or '.'"

export const AgentId = Schema.String.pipe(
  Schema.filter((s) => AGENT_ID.test(s), {
    message: () => `agent id ${AGENT_ID_RULE}`
  }),
  Schema.brand("AgentId")
).annotations({ identifier: "AgentId" })
export type AgentId = typeof AgentId.Type

export const isAgentId = Schema.is(AgentId)

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/

/**
 * Canonical standard base64 with padding, as text (the wire form is kept so records echo what was
 * sent). Canonical: unused trailing bits are zero, so one text means exactly one byte string.
 */
export const Base64 = Schema.String.pipe(
  Schema.filter((s) => BASE64.test(s) && Buffer.from(s, "base64").toString("base64") === s, {
    message: () => "is not valid base64"
  }),
  Schema.brand("Base64")
).annotations({ identifier: "Base64" })
export type Base64 = typeof Base64.Type

/** Base64 text ⇄ bytes. Decoding is strict: Buffer.from alone would skip invalid characters. */
export const Base64Bytes = Schema.transform(Base64, Schema.Uint8ArrayFromSelf, {
  strict: true,
  decode: (s) => new Uint8Array(Buffer.from(s, "base64")),
  encode: (b) => Base64.make(Buffer.from(b).toString("base64"))
}).annotations({ identifier: "Base64Bytes" })

export const toBase64 = (bytes: Uint8Array): Base64 => Base64.make(Buffer.from(bytes).toString("base64"))

/** Agent-endpoint nonces and challenges: 20 letters and digits (spec §8). */
export const Nonce = Schema.String.pipe(
  Schema.pattern(/^[A-Za-z0-9]{20}$/, { message: () => "must be 20 letters and digits" }),
  Schema.brand("Nonce")
).annotations({ identifier: "Nonce" })
export type Nonce = typeof Nonce.Type

/** PEM text holding at least one `-----BEGIN X-----` block. */
export const PemText = Schema.String.pipe(
  Schema.filter((s) => /-----BEGIN [A-Z0-9 ]+-----[\s\S]+?-----END [A-Z0-9 ]+-----/.test(s), {
    message: () => "is not PEM text"
  }),
  Schema.brand("PemText")
).annotations({ identifier: "PemText" })
export type PemText = typeof PemText.Type

/** Hex text (lower or upper case), e.g. HMAC auth tags. */
export const HexString = Schema.String.pipe(
  Schema.pattern(/^(?:[0-9a-fA-F]{2})*$/, { message: () => "is not hex text" }),
  Schema.brand("HexString")
).annotations({ identifier: "HexString" })
export type HexString = typeof HexString.Type

const PORT_MESSAGE = "must be a port number 1-65535"

/** A TCP port; accepts the integer or its decimal string (the spec documents `port` as a string). */
export const PortNumber = Schema.transformOrFail(
  Schema.Union(Schema.Number, Schema.String).annotations({ message: () => PORT_MESSAGE }),
  Schema.Int.pipe(Schema.between(1, 65535)),
  {
    strict: true,
    decode: (v, _, ast) => {
      const n = typeof v === "number" ? v : /^\d{1,5}$/.test(v) ? Number(v) : Number.NaN
      return Number.isInteger(n) && n >= 1 && n <= 65535
        ? ParseResult.succeed(n)
        : ParseResult.fail(new ParseResult.Type(ast, v, PORT_MESSAGE))
    },
    encode: ParseResult.succeed
  }
).annotations({ identifier: "PortNumber" })

/** An IPv4 or IPv6 literal or a host name (agents are reached at what they announce). */
export const HostAddress = Schema.String.pipe(
  Schema.filter((s) => s.length > 0 && s.length <= 255 && /^[A-Za-z0-9.:_-]+$/.test(s), {
    message: () => "is not an IP address or host name"
  })
).annotations({ identifier: "HostAddress" })

/** API versions as written in paths and version lists: "2.6". */
export const ApiVersionString = Schema.String.pipe(Schema.pattern(/^\d+\.\d+$/)).annotations({
  identifier: "ApiVersionString"
})
