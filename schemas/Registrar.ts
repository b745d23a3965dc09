/** Registrar wire formats (spec §2.6, §4.2; keylime-wire.md §1.3). */
import { Schema } from "effect"
import { AgentId, Base64, HostAddress, PemText, PortNumber } from "./Common.js"

/** `mtls_cert`: the agent's HTTPS certificate (PEM), or "disabled" when the agent serves without mTLS. */
export const MtlsCert = Schema.String.pipe(
  Schema.filter((s) => s === "disabled" || Schema.is(PemText)(s), {
    message: () => "must be a PEM certificate or \"disabled\""
  })
).annotations({ identifier: "MtlsCert" })

const optionalNullable = <A, I, R>(schema: Schema.Schema<A, I, R>) =>
  Schema.optionalWith(Schema.NullOr(schema), { exact: true })

/**
 * POST /agents/:id body. Keylime agents also send IAK/IDevID fields; they are not used (attest's
 * registrar implements `tpm_identity` default and ek_cert) and are ignored on decode.
 */
export const RegisterRequest = Schema.Struct({
  ekcert: optionalNullable(Base64),
  ek_tpm: optionalNullable(Base64),
  aik_tpm: Base64,
  // Keylime accepts a registration without it (agents with mTLS off); stored as null
  mtls_cert: optionalNullable(MtlsCert),
  ip: optionalNullable(HostAddress),
  port: optionalNullable(PortNumber)
}).annotations({ identifier: "RegisterRequest" })
export type RegisterRequest = typeof RegisterRequest.Type

/** POST /agents (no id in the path): the id travels in the body. */
export const RegisterWithIdRequest = Schema.Struct({
  ...RegisterRequest.fields,
  agent_id: AgentId
}).annotations({ identifier: "RegisterWithIdRequest" })

/** `blob`: base64 of the tpm2-tools credential file (MakeCredential over the AK name). */
export const RegisterResponse = Schema.Struct({ blob: Base64 }).annotations({ identifier: "RegisterResponse" })

export const ActivateRequest = Schema.Struct({
  auth_tag: Schema.String.pipe(Schema.maxLength(1024))
}).annotations({ identifier: "ActivateRequest" })

/** PUT /v2.1/agents/:id/vactivate (TPM 1.2 deep quotes); accepted for the error it earns. */
export const VactivateRequest = Schema.Struct({
  deepquote: Schema.optional(Schema.String)
}).annotations({ identifier: "VactivateRequest" })

/** GET /agents/:id results (spec §2.6), field order as Keylime renders it. */
export const AgentRecord = Schema.Struct({
  agent_id: Schema.String,
  ek_tpm: Base64,
  ekcert: Schema.NullOr(Base64),
  aik_tpm: Base64,
  ip: Schema.NullOr(Schema.String),
  port: Schema.NullOr(Schema.Int),
  mtls_cert: Schema.NullOr(Schema.String),
  regcount: Schema.Int
}).annotations({ identifier: "RegistrarAgentRecord" })
export type AgentRecord = typeof AgentRecord.Type

/** GET /agents results: a plain list of ids (the registrar's shape; the verifier nests them). */
export const AgentList = Schema.Struct({ uuids: Schema.Array(Schema.String) }).annotations({
  identifier: "RegistrarAgentList"
})

/** Unversioned GET /version. */
export const VersionInfo = Schema.Struct({
  current_version: Schema.String,
  supported_versions: Schema.Array(Schema.String)
}).annotations({ identifier: "VersionInfo" })
