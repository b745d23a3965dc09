/**
 * Reads a POST /agents/:id body (every variant of spec §2.3) into a checked `AgentCreation`, or the
 * first refused field, through the one AgentConfig schema (src/attestation/AgentConfig.ts), whose
 * fields carry their checks and reasons. What Keylime's texts fix is checked here first: its order
 * of required keys (its texts name the first missing one, and the wire replay compares them), the
 * model, the mTLS rule and a null runtime policy. Nothing unusable is stored: a bad field is
 * refused at creation, not at the first quote. Pure: no I/O, no clock.
 */
import { Either, ParseResult, Schema } from "effect"
import { AgentId, PortNumber } from "../../../schemas/Common.js"
import { AgentConfig, decodeBase64, NOT_JSON, REQUIRED_KEYS, wrongTypeReason } from "../../attestation/AgentConfig.js"
import { InvalidAgentBody } from "./errors.js"

export { ENCRYPTION_ALGS, HASH_ALGS, isPolicyName, POLICY_NAME_RULE, REQUIRED_KEYS, SIGNING_ALGS } from "../../attestation/AgentConfig.js"

/** The runtime policy a creation body carries: none, or a document to store under a name. */
export type InlineRuntimePolicy =
  | { readonly _tag: "None" }
  | {
    readonly _tag: "Inline"
    /** The policy text as sent (base64-decoded `runtime_policy`, or the legacy `allowlist`). */
    readonly text: string
    /** Detached-signature or DSSE key bytes (`runtime_policy_key`, base64-decoded). */
    readonly key: Uint8Array | null
    readonly signature: Uint8Array | null
    /** From a 2.1-era `allowlist` (may be the old `{"hashes": …}` JSON). */
    readonly legacy: boolean
  }

/** A creation body that passed every check. Texts are kept as sent (records echo them). */
export interface AgentCreation {
  readonly v: string | null
  readonly ip: string
  readonly port: number
  readonly tpmPolicy: string
  readonly vtpmPolicy: string | null
  readonly metaData: string
  readonly imaSignVerificationKeys: string
  readonly revocationKey: string
  readonly acceptTpmHashAlgs: ReadonlyArray<string>
  readonly acceptTpmEncryptionAlgs: ReadonlyArray<string>
  readonly acceptTpmSigningAlgs: ReadonlyArray<string>
  readonly akTpm: string
  readonly mtlsCert: string | null
  readonly supportedVersion: string | null
  readonly runtimePolicyName: string | null
  readonly runtimePolicy: InlineRuntimePolicy
  readonly mbPolicyName: string | null
  /** The reference state as a JSON object text, or null for none. */
  readonly mbPolicy: string | null
  /**
   * How the agent is attested: `pull` (polled) or `push` (it sends evidence, API 3.0). attest's
   * addition `attestation_model`, so one verifier serves both kinds; default: the verifier's `mode`.
   */
  readonly model: AttestationModel
}

export type AttestationModel = "pull" | "push"

export interface AgentBodyOptions {
  /** `enable_agent_mtls`: a pull agent's certificate is required (a push agent listens on no port). */
  readonly requireMtlsCert: boolean
  /** The verifier's `mode`: the model of an agent whose body does not say. */
  readonly defaultModel: AttestationModel
}

type Fail = InvalidAgentBody
type Body = Readonly<Record<string, unknown>>

const decodeConfig = Schema.decodeUnknownEither(AgentConfig)
const decodePort = Schema.decodeUnknownSync(PortNumber)
const isAgentId = Schema.is(AgentId)
const utf8 = new TextDecoder("utf-8", { fatal: true })

/** The first refused field of a decode: the check's reason, or the field's wrong-type reason. */
const refusalOf = (agentId: string, body: Body, error: ParseResult.ParseError): Fail => {
  const issues = ParseResult.ArrayFormatter.formatErrorSync(error)
  const field = String(issues[0]?.path[0] ?? "body")
  const refined = issues.find((i) => i.path[0] === field && i._tag === "Refinement")
  const reason = refined?.message ?? wrongTypeReason(field) ?? "is not valid"
  // one text for every bad port (its base type, an integer, is itself a refinement)
  if (field === "cloudagent_port") return new InvalidAgentBody({ agentId, field, problem: "not_an_integer", reason: wrongTypeReason(field)!, value: body[field] })
  return new InvalidAgentBody({ agentId, field, problem: reason === NOT_JSON ? "not_json" : "invalid", reason })
}

/** Reads a checked creation body, or the first field refused (Keylime's key order first). */
export const decodeAgentCreation = (
  agentId: string,
  input: unknown,
  options: AgentBodyOptions
): Either.Either<AgentCreation, InvalidAgentBody> => {
  const fail = (field: string, problem: Fail["problem"], reason: string) => Either.left(new InvalidAgentBody({ agentId, field, problem, reason }))

  if (!isAgentId(agentId)) return fail("agent_id", "invalid", "must be 1-255 characters of letters, digits, '-', '_' or '.'")
  if (typeof input !== "object" || input === null || Array.isArray(input)) {
    return fail("body", "invalid", "must be a JSON object")
  }
  // a key whose value is undefined (a merged PATCH) is absent, as in JSON
  const body: Body = Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined))
  const has = (k: string) => Object.prototype.hasOwnProperty.call(body, k)

  for (const key of REQUIRED_KEYS) if (!has(key)) return fail(key, "missing", "is required")
  if (!has("cloudagent_ip")) return fail("cloudagent_ip", "missing", "is required")
  if (!has("cloudagent_port")) return fail("cloudagent_port", "missing", "is required")

  const modelRaw = body["attestation_model"]
  if (modelRaw !== undefined && modelRaw !== null && modelRaw !== "pull" && modelRaw !== "push") {
    return fail("attestation_model", "invalid", "must be \"pull\" or \"push\"")
  }
  const model: AttestationModel = modelRaw === "pull" || modelRaw === "push" ? modelRaw : options.defaultModel

  const mtlsRaw = body["mtls_cert"]
  if (options.requireMtlsCert && model === "pull" && (mtlsRaw === undefined || mtlsRaw === null || mtlsRaw === "disabled")) {
    return fail("mtls_cert", "mtls_required", "is required while enable_agent_mtls is on")
  }

  // 2.1-era bodies carry the policy as `allowlist` and have no mb fields
  const legacy = !has("runtime_policy") && has("allowlist")
  if (!legacy && (body["runtime_policy"] === undefined || body["runtime_policy"] === null)) {
    return fail("runtime_policy", "missing", "is required (base64 of the policy JSON, \"\" for none)")
  }
  const mbByRefstate = has("mb_refstate")
  if (!legacy && !mbByRefstate) {
    if (!has("mb_policy_name")) return fail("mb_policy_name", "missing", "is required")
    if (!has("mb_policy")) return fail("mb_policy", "missing", "is required")
  }

  // --- every field's check, in the schema's order ------------------------------------------------
  const decoded = decodeConfig(body, { errors: "first" })
  if (Either.isLeft(decoded)) return Either.left(refusalOf(agentId, body, decoded.left))
  const c = decoded.right

  // --- what the fields mean together -------------------------------------------------------------
  const bytes = (s: string | null | undefined) => (s === undefined || s === null || s === "" ? null : decodeBase64(s)!)
  const key = bytes(c.runtime_policy_key)
  const signature = bytes(c.runtime_policy_sig)
  if (signature !== null && key === null) return fail("runtime_policy_sig", "invalid", "needs runtime_policy_key (they must be given together)")
  let runtimePolicy: InlineRuntimePolicy
  if (legacy) {
    const allowlist = c.allowlist!
    runtimePolicy = allowlist.trim() === "" || allowlist.trim() === "null"
      ? { _tag: "None" }
      : { _tag: "Inline", text: allowlist, key, signature, legacy: true }
  } else if (c.runtime_policy === "") {
    if (key !== null) return fail("runtime_policy_key", "invalid", "is given without a runtime_policy")
    runtimePolicy = { _tag: "None" }
  } else {
    runtimePolicy = { _tag: "Inline", text: utf8.decode(decodeBase64(c.runtime_policy!)!), key, signature, legacy: false }
  }
  // Keylime tests a name for truth: "" means no name
  const name = (n: string | null | undefined) => (n === undefined || n === null || n === "" ? null : n)
  const mb = has("mb_policy") || !mbByRefstate ? c.mb_policy : c.mb_refstate
  const mtls = c.mtls_cert ?? null

  return Either.right({
    v: c.v ?? null,
    ip: c.cloudagent_ip,
    port: decodePort(c.cloudagent_port),
    tpmPolicy: c.tpm_policy,
    vtpmPolicy: c.vtpm_policy ?? null,
    metaData: c.metadata,
    imaSignVerificationKeys: c.ima_sign_verification_keys,
    revocationKey: c.revocation_key,
    acceptTpmHashAlgs: c.accept_tpm_hash_algs,
    acceptTpmEncryptionAlgs: c.accept_tpm_encryption_algs,
    acceptTpmSigningAlgs: c.accept_tpm_signing_algs,
    akTpm: c.ak_tpm,
    mtlsCert: mtls === "disabled" ? null : mtls,
    supportedVersion: c.supported_version ?? null,
    runtimePolicyName: name(c.runtime_policy_name),
    runtimePolicy,
    mbPolicyName: name(c.mb_policy_name),
    mbPolicy: mb === undefined || mb === null || mb.trim() === "" || mb.trim() === "null" ? null : mb,
    model
  })
}
