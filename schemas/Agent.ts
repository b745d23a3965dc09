/**
 * Pull-agent wire formats (spec §8/§9; rust-keylime's answers, push-model.md §4): what the agent
 * serves and what the verifier and tenant decode with `HttpApiClient` from src/agent/Api.ts. Fields
 * the agent leaves out are optional; where other agents send `null` instead, null is accepted.
 */
import { Schema } from "effect"

const optionalNullable = <A, I, R>(schema: Schema.Schema<A, I, R>) => Schema.optionalWith(Schema.NullOr(schema), { exact: true })

/** `r<TPMS_ATTEST b64>:<TPMT_SIGNATURE b64>:<PCR blob b64>`, checked by src/tpm/verifyQuote.ts. */
export const QuoteString = Schema.String.pipe(
  Schema.pattern(/^r[A-Za-z0-9+/=]*:[A-Za-z0-9+/=]*:[A-Za-z0-9+/=]*$/, { message: () => "is not a Keylime quote string (r<attest>:<signature>:<pcrs>)" })
).annotations({ identifier: "QuoteString" })

/** GET /quotes/identity results. */
export const IdentityQuote = Schema.Struct({
  quote: QuoteString,
  hash_alg: Schema.String,
  enc_alg: Schema.String,
  sign_alg: Schema.String,
  /** The NK (PEM), bound by PCR 16 = H(0 ‖ H(pubkey)). */
  pubkey: Schema.String,
  /** Boot time, seconds since the epoch. */
  boottime: Schema.Int
}).annotations({ identifier: "AgentIdentityQuote" })
export type IdentityQuote = typeof IdentityQuote.Type

/** GET /quotes/integrity results. */
export const IntegrityQuote = Schema.Struct({
  quote: QuoteString,
  hash_alg: Schema.String,
  enc_alg: Schema.String,
  sign_alg: Schema.String,
  /** Left out for partial=1 (the verifier holds the NK). */
  pubkey: optionalNullable(Schema.String),
  boottime: Schema.Int,
  /** ima-ng ASCII lines from `ima_measurement_list_entry`, when PCR 10 is quoted. */
  ima_measurement_list: optionalNullable(Schema.String),
  /** base64 of the TCG2 boot log, when PCR 0 is quoted. */
  mb_measurement_list: optionalNullable(Schema.String),
  ima_measurement_list_entry: optionalNullable(Schema.Int)
}).annotations({ identifier: "AgentIntegrityQuote" })
export type IntegrityQuote = typeof IntegrityQuote.Type

/** Query of GET /quotes/integrity, as sent (the agent checks it and answers 400 naming the problem). */
export const IntegrityQuoteQuery = Schema.Struct({
  nonce: Schema.String,
  /** Hex PCR mask, e.g. `0x400`. */
  mask: Schema.String,
  partial: Schema.Literal("0", "1"),
  ima_ml_entry: Schema.optionalWith(Schema.NumberFromString, { exact: true })
}).annotations({ identifier: "AgentIntegrityQuoteQuery" })

export const IdentityQuoteQuery = Schema.Struct({ nonce: Schema.String }).annotations({ identifier: "AgentIdentityQuoteQuery" })

/** GET /keys/pubkey results. */
export const PubkeyResult = Schema.Struct({ pubkey: Schema.String }).annotations({ identifier: "AgentPubkey" })

/** POST /keys/ukey body: U encrypted to the NK, the tenant's auth_tag over K, an optional payload. */
export const UKeyRequest = Schema.Struct({
  auth_tag: Schema.String,
  encrypted_key: Schema.String,
  payload: Schema.optional(Schema.NullOr(Schema.String))
}).annotations({ identifier: "AgentUKey" })
export type UKeyRequest = typeof UKeyRequest.Type

/** POST /keys/vkey body: V encrypted to the NK. */
export const VKeyRequest = Schema.Struct({ encrypted_key: Schema.String }).annotations({ identifier: "AgentVKey" })
export type VKeyRequest = typeof VKeyRequest.Type

export const VerifyQuery = Schema.Struct({ challenge: Schema.String }).annotations({ identifier: "AgentVerifyQuery" })

/** GET /keys/verify results: HMAC-SHA384(K, challenge), hex. */
export const VerifyResult = Schema.Struct({ hmac: Schema.String }).annotations({ identifier: "AgentVerify" })

/** POST /notifications/revocation body: the event JSON as text and its signature (base64). */
export const RevocationNotice = Schema.Struct({
  msg: Schema.String,
  signature: Schema.optional(Schema.NullOr(Schema.String))
}).annotations({ identifier: "AgentRevocationNotice" })
export type RevocationNotice = typeof RevocationNotice.Type

/** GET /agent/info results (API ≥ 2.2). */
export const AgentInfo = Schema.Struct({
  agent_uuid: Schema.String,
  tpm_hash_alg: Schema.String,
  /** `rsa`/`ecc` before 2.5, `rsa2048`/`ecc256` from 2.5. */
  tpm_enc_alg: Schema.String,
  tpm_sign_alg: Schema.String,
  ak_handle: Schema.Int
}).annotations({ identifier: "AgentInfo" })
export type AgentInfo = typeof AgentInfo.Type

/** Unversioned GET /version results. */
export const AgentVersion = Schema.Struct({
  supported_version: Schema.String,
  supported_versions: Schema.Array(Schema.String)
}).annotations({ identifier: "AgentVersion" })
export type AgentVersion = typeof AgentVersion.Type
