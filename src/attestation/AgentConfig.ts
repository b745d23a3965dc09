/**
 * THE agent configuration (POST /agents/:id body, v3 agent attributes; spec §2.3): one Effect
 * Schema that the verifier decodes, the tenant and the v3 administration encode, and the OpenAPI
 * documents describe. Every variant: Keylime 7.x's tenant body, the spec's 2.5 body with
 * `mb_refstate`, the 2.1-era body with `vtpm_policy` and `allowlist`. Fields are declared in the
 * order the verifier judges them; each carries its check, whose failure message is the reason
 * (attest's `<field> <reason>` texts), and `wrongType` says the reason when the value is not even
 * of the field's type. What Keylime's texts fix (the first missing key in its handler's order, the
 * mTLS rule, a null runtime policy) is checked before the decode by src/verifier/domain/agentBody.ts.
 */
import * as crypto from "node:crypto"
import { Either, Schema, SchemaAST as AST, Struct } from "effect"
import { HostAddress, PortNumber } from "../../schemas/Common.js"
import { decodeImaKeyringJson } from "../../schemas/RuntimePolicy.js"
import { isRestrictedSigningKey, parseTpm2bPublic, publicKeyOf } from "../tpm/public.js"
import { checkTpmPolicy } from "./tpmPolicyCheck.js"

/** Keylime's required keys, in the order its handler reads them (the first missing is named). */
export const REQUIRED_KEYS = [
  "tpm_policy",
  "metadata",
  "ima_sign_verification_keys",
  "revocation_key",
  "accept_tpm_hash_algs",
  "accept_tpm_encryption_algs",
  "accept_tpm_signing_algs",
  "ak_tpm"
] as const

export const HASH_ALGS: ReadonlySet<string> = new Set(["sha1", "sha256", "sha384", "sha512", "sm3_256"])
export const ENCRYPTION_ALGS: ReadonlySet<string> = new Set(["rsa", "ecc", "rsa1024", "rsa2048", "rsa3072", "rsa4096", "ecc192", "ecc224", "ecc256", "ecc384", "ecc521"])
export const SIGNING_ALGS: ReadonlySet<string> = new Set(["rsassa", "rsapss", "ecdsa", "ecdaa", "ecschnorr", "sm2"])

/** Names attest stores policies under: what fits a URL path segment unescaped. */
const POLICY_NAME = /^[A-Za-z0-9._-]{1,255}$/
export const isPolicyName = (s: string): boolean => POLICY_NAME.test(s)
export const POLICY_NAME_RULE = "must be 1-255 characters of letters, digits, '-', '_' or '.'"

/** The reason of a reference state that is not JSON (the verifier answers it as Keylime's JSON error). */
export const NOT_JSON = "is not JSON"

// a flat character class and a length check: the grouped form `(?:[…]{4})*` overflows the regexp
// stack on a policy of megabytes (a 100,000-digest runtime policy is ~15 MB of base64)
const BASE64_CHARS = /^[A-Za-z0-9+/]*={0,2}$/
export const decodeBase64 = (s: string): Uint8Array | undefined =>
  s.length % 4 === 0 && BASE64_CHARS.test(s) && Buffer.from(s, "base64").toString("base64") === s ? new Uint8Array(Buffer.from(s, "base64")) : undefined

const decodeObjectJson = Schema.decodeUnknownEither(Schema.parseJson(Schema.Record({ key: Schema.String, value: Schema.Unknown })))
const decodeAnyJson = Schema.decodeUnknownEither(Schema.parseJson())
const isPort = Schema.is(PortNumber)
const utf8 = new TextDecoder("utf-8", { fatal: true })

/** Annotation: the reason when the value is not of the field's type. */
export const WrongType = Symbol.for("attest/attestation/AgentConfig/wrongType")

/** A field: its wire type, its check (true, or the reason it fails), the reason for a wrong type. */
const field = <A, I>(type: Schema.Schema<A, I>, wrongType: string, check: (a: A) => true | string = () => true) =>
  type.pipe(Schema.filter((a) => check(a))).annotations({ [WrongType]: wrongType })

const isJsonObjectText = (s: string) => Either.isRight(decodeObjectJson(s))
const orEmpty = (check: (s: string) => true | string) => (s: string) => (s === "" ? true : check(s))
const algorithms = (known: ReadonlySet<string>) =>
  field(Schema.Array(Schema.String), "must be a non-empty list of algorithm names", (list) => {
    if (list.length === 0) return "must be a non-empty list of algorithm names"
    const unknown = list.find((x) => !known.has(x))
    return unknown === undefined || `names an unknown algorithm ${JSON.stringify(unknown)} (known: ${[...known].join(", ")})`
  })
const policyName = field(Schema.String, "must be a string or null", orEmpty((s) => isPolicyName(s) || POLICY_NAME_RULE))
const policyBytes = field(Schema.String, "must be base64 text or null", orEmpty((s) => decodeBase64(s) !== undefined || "is not valid base64"))
const referenceState = field(Schema.String, "must be the reference state as a JSON string, or null", (s) => {
  if (s.trim() === "" || s.trim() === "null") return true
  if (Either.isLeft(decodeAnyJson(s))) return NOT_JSON
  return isJsonObjectText(s) || "must be a JSON object (the reference state)"
})
const nullable = <A, I>(s: Schema.Schema<A, I>) => Schema.optionalWith(Schema.NullOr(s), { exact: true })

/** `cloudagent_port`: an integer, or its decimal string (the spec documents a string). */
export const PortField = field(Schema.Union(Schema.Int, Schema.String), "must be a port number 1-65535", (p) => isPort(p) || "must be a port number 1-65535")

/** `runtime_policy`: base64 of the policy JSON (or its DSSE envelope), "" for none. */
export const RuntimePolicyField = field(
  Schema.String,
  "must be a string: base64 of the policy JSON, \"\" for none",
  orEmpty((s) => {
    // Keylime's lenient b64decode turns text such as "%%%" into an empty policy; attest refuses it
    const bytes = decodeBase64(s)
    if (bytes === undefined) return "is not valid base64 (base64 of the policy JSON, \"\" for none)"
    return Either.isRight(Either.try(() => utf8.decode(bytes))) || "is not UTF-8 text once base64-decoded"
  })
)

const isHost = Schema.is(HostAddress)
const VField = field(Schema.String, "must be base64 of 32 bytes", (s) => decodeBase64(s)?.length === 32 || "must be base64 of 32 bytes")
const VtpmPolicyField = field(Schema.String, "must be a string or null", orEmpty((s) => isJsonObjectText(s) || "must be a string holding a JSON object"))
const AllowlistField = field(Schema.String, "must be the allowlist JSON as a string")

/** Each field with its check, in the order the verifier judges them. */
export const agentConfigFields = {
  v: nullable(VField),
  cloudagent_ip: field(Schema.String, "is not an IP address or host name", (s) => isHost(s) || "is not an IP address or host name"),
  cloudagent_port: PortField,
  tpm_policy: field(Schema.String, "must be a string holding a JSON object", (s) => Either.match(checkTpmPolicy(s), { onLeft: (reason) => reason, onRight: () => true })),
  vtpm_policy: nullable(VtpmPolicyField),
  metadata: field(Schema.String, "must be a string holding a JSON object, such as \"{}\"", (s) => isJsonObjectText(s) || "must be a string holding a JSON object, such as \"{}\""),
  ima_sign_verification_keys: field(
    Schema.String,
    "must be a string (\"\" for none)",
    (s) =>
      s.trim() === "" || Either.isRight(decodeImaKeyringJson(s)) ||
      "must be \"\" or a keyring JSON object {\"meta\": {\"version\": 1}, \"keyids\": [...], \"pubkeys\": [PEM, ...]}"
  ),
  revocation_key: field(Schema.String, "must be a string (\"\" for none)", orEmpty((s) => {
    const key = Either.try(() => crypto.createPrivateKey(s))
    return (Either.isRight(key) && key.right.asymmetricKeyType === "rsa") || "must be \"\" or an RSA private key in PEM (it signs revocation messages)"
  })),
  accept_tpm_hash_algs: algorithms(HASH_ALGS),
  accept_tpm_encryption_algs: algorithms(ENCRYPTION_ALGS),
  accept_tpm_signing_algs: algorithms(SIGNING_ALGS),
  ak_tpm: field(Schema.String, "must be base64 of the AK's TPM2B_PUBLIC", (s) => {
    const bytes = decodeBase64(s)
    if (bytes === undefined) return "must be base64 of the AK's TPM2B_PUBLIC"
    const ak = parseTpm2bPublic(bytes)
    if (Either.isLeft(ak)) return `is not a TPM2B_PUBLIC: ${ak.left.message}`
    return (isRestrictedSigningKey(ak.right) && Either.isRight(publicKeyOf(ak.right))) || "is not a restricted signing key with a usable public key"
  }),
  mtls_cert: nullable(field(
    Schema.String,
    "must be the agent's certificate in PEM, \"disabled\" or null",
    (s) => s === "disabled" || Either.isRight(Either.try(() => new crypto.X509Certificate(s))) || "must be the agent's certificate in PEM, \"disabled\" or null"
  )),
  supported_version: nullable(field(Schema.String, "must be a string or null", (s) => /^\d{1,3}\.\d{1,3}$/.test(s) || "must be an API version such as \"2.2\"")),
  runtime_policy_name: nullable(policyName),
  runtime_policy_key: nullable(policyBytes),
  runtime_policy_sig: nullable(policyBytes),
  /** The 2.1-era inline policy: a JSON document as a string (may be the old `{"hashes": …}`). */
  allowlist: Schema.optionalWith(AllowlistField, { exact: true }),
  runtime_policy: Schema.optionalWith(RuntimePolicyField, { exact: true }),
  mb_policy_name: nullable(policyName),
  mb_policy: nullable(referenceState),
  /** The spec's 2.5 name for the measured-boot reference state (sample: the string "null"). */
  mb_refstate: nullable(referenceState),
  /**
   * attest's addition: `push` for an agent that sends its evidence (API 3.0; no agent certificate,
   * never polled), `pull` for one the verifier polls. Absent: the verifier's `mode`.
   */
  attestation_model: nullable(Schema.Literal("pull", "push")),
  /** Where the tenant found the verifier (Keylime sends them; the verifier does not read them). */
  verifier_ip: Schema.optional(Schema.String),
  verifier_port: Schema.optional(Schema.Union(Schema.Int, Schema.String))
}

/** The reason when a field's value is not of its type (the WrongType annotation of its schema). */
export const wrongTypeReason = (fieldName: string): string | undefined => {
  const ast = AgentConfig.ast
  const property = AST.isTypeLiteral(ast) ? ast.propertySignatures.find((p) => p.name === fieldName) : undefined
  const find = (ast: AST.AST): string | undefined => {
    const own = ast.annotations[WrongType]
    if (typeof own === "string") return own
    if (AST.isUnion(ast)) for (const member of ast.types) if (find(member) !== undefined) return find(member)
    return undefined
  }
  return property === undefined ? undefined : find(property.type)
}

/** The one agent configuration: every field of every variant (the verifier decodes this). */
export const AgentConfig = Schema.Struct(agentConfigFields).annotations({ identifier: "AgentConfig" })
export type AgentConfig = typeof AgentConfig.Type

const f = agentConfigFields

/**
 * The body as Keylime's tenant sends it (API 2.1 to 2.6): Keylime requires `tpm_policy, metadata,
 * ima_sign_verification_keys, revocation_key, accept_tpm_*_algs, ak_tpm, mb_policy_name, mb_policy`
 * and a string `runtime_policy` ("" for none).
 */
export const AgentCreateRequest = Schema.Struct({
  ...Struct.pick(f, "v", "cloudagent_ip", "cloudagent_port", "verifier_ip", "verifier_port", "tpm_policy"),
  runtime_policy: RuntimePolicyField,
  ...Struct.pick(f, "runtime_policy_name", "runtime_policy_key", "runtime_policy_sig", "mb_policy", "mb_policy_name", "mb_refstate"),
  ...Struct.pick(f, "ima_sign_verification_keys", "metadata", "revocation_key", "accept_tpm_hash_algs", "accept_tpm_encryption_algs"),
  ...Struct.pick(f, "accept_tpm_signing_algs", "ak_tpm", "mtls_cert", "supported_version", "attestation_model")
}).annotations({ identifier: "AgentCreateRequest" })
export type AgentCreateRequest = typeof AgentCreateRequest.Type

/**
 * The 2.1-era body (spec §2.3 "earlier variant"): `vtpm_policy` and an inline `allowlist` instead
 * of `runtime_policy*` and the mb fields. attest still needs `ak_tpm` (Keylime 2.0 fetched the AK
 * from the registrar; attest's verifier does not).
 */
export const LegacyAgentCreateRequest = Schema.Struct({
  v: VField,
  ...Struct.pick(f, "cloudagent_ip", "cloudagent_port", "tpm_policy"),
  vtpm_policy: VtpmPolicyField,
  allowlist: AllowlistField,
  ...Struct.pick(f, "ima_sign_verification_keys", "metadata", "revocation_key", "accept_tpm_hash_algs", "accept_tpm_encryption_algs"),
  ...Struct.pick(f, "accept_tpm_signing_algs", "ak_tpm", "mtls_cert", "supported_version")
}).annotations({ identifier: "LegacyAgentCreateRequest" })
export type LegacyAgentCreateRequest = typeof LegacyAgentCreateRequest.Type

/** POST /agents/:id body: the 2.1–2.6 body, or the 2.1-era one with `vtpm_policy` and `allowlist`. */
export const AgentCreateBody = Schema.Union(AgentCreateRequest, LegacyAgentCreateRequest).annotations({ identifier: "AgentCreateBody" })
export type AgentCreateBody = typeof AgentCreateBody.Type
