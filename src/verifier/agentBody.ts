/**
 * Reads a POST /agents/:id body (every variant of spec §2.3: Keylime 7.x's tenant body, the spec's
 * 2.5 body with `mb_refstate`, the 2.1-era body with `vtpm_policy` and `allowlist`) into a checked
 * `AgentCreation`, or the first refused field. Keylime's order of required keys is kept (its texts
 * name the first missing one, and the wire replay compares them); every value is then checked so
 * that nothing unusable is stored: a bad field is refused at creation, not at the first quote.
 * Pure: no I/O, no clock.
 */
import * as crypto from "node:crypto"
import { Either, Schema } from "effect"
import { AgentId, HostAddress, PortNumber } from "../../schemas/Common.js"
import { decodeImaKeyringJson } from "../../schemas/RuntimePolicy.js"
import { isRestrictedSigningKey, parseTpm2bPublic, publicKeyOf } from "../tpm/public.js"
import { InvalidAgentBody } from "./errors.js"
import { checkTpmPolicy } from "./policy/tpmPolicyCheck.js"

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

// a flat character class and a length check: the grouped form `(?:[…]{4})*` overflows the regexp
// stack on a policy of megabytes (a 100,000-digest runtime policy is ~15 MB of base64)
const BASE64_CHARS = /^[A-Za-z0-9+/]*={0,2}$/
const BASE64 = { test: (s: string): boolean => s.length % 4 === 0 && BASE64_CHARS.test(s) }
const decodeBase64 = (s: string): Uint8Array | undefined =>
  BASE64.test(s) && Buffer.from(s, "base64").toString("base64") === s ? new Uint8Array(Buffer.from(s, "base64")) : undefined

const decodeObjectJson = Schema.decodeUnknownEither(Schema.parseJson(Schema.Record({ key: Schema.String, value: Schema.Unknown })))
const decodeAnyJson = Schema.decodeUnknownEither(Schema.parseJson())
const isHost = Schema.is(HostAddress)
const decodePort = Schema.decodeUnknownEither(PortNumber)
const isAgentId = Schema.is(AgentId)

/** Reads a checked creation body, or the first field refused (Keylime's key order first). */
export const decodeAgentCreation = (
  agentId: string,
  input: unknown,
  options: AgentBodyOptions
): Either.Either<AgentCreation, InvalidAgentBody> => {
  const fail = (field: string, problem: Fail["problem"], reason: string, extra: Partial<Pick<Fail, "value">> = {}) =>
    Either.left(new InvalidAgentBody({ agentId, field, problem, reason, ...extra }))

  if (!isAgentId(agentId)) return fail("agent_id", "invalid", "must be 1-255 characters of letters, digits, '-', '_' or '.'")
  if (typeof input !== "object" || input === null || Array.isArray(input)) {
    return fail("body", "invalid", "must be a JSON object")
  }
  const body = input as Body
  const has = (k: string) => Object.prototype.hasOwnProperty.call(body, k) && body[k] !== undefined

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

  // --- values, in body order ---------------------------------------------------------------------
  const str = (k: string): string | undefined => (typeof body[k] === "string" ? (body[k] as string) : undefined)
  const optionalString = (k: string): Either.Either<string | null, Fail> => {
    const v = body[k]
    if (v === undefined || v === null) return Either.right(null)
    return typeof v === "string" ? Either.right(v) : fail(k, "invalid", "must be a string or null")
  }

  const v = body["v"]
  let vText: string | null = null
  if (v !== undefined && v !== null) {
    if (typeof v !== "string") return fail("v", "invalid", "must be base64 of 32 bytes")
    const bytes = decodeBase64(v)
    if (bytes === undefined || bytes.length !== 32) return fail("v", "invalid", "must be base64 of 32 bytes")
    vText = v
  }

  const ip = body["cloudagent_ip"]
  if (typeof ip !== "string" || !isHost(ip)) return fail("cloudagent_ip", "invalid", "is not an IP address or host name")
  const port = decodePort(body["cloudagent_port"])
  if (Either.isLeft(port)) {
    return fail("cloudagent_port", "not_an_integer", "must be a port number 1-65535", { value: body["cloudagent_port"] })
  }

  const tpmPolicy = str("tpm_policy")
  if (tpmPolicy === undefined) return fail("tpm_policy", "invalid", "must be a string holding a JSON object")
  const tpm = checkTpmPolicy(tpmPolicy)
  if (Either.isLeft(tpm)) return fail("tpm_policy", "invalid", tpm.left)

  const vtpm = optionalString("vtpm_policy")
  if (Either.isLeft(vtpm)) return Either.left(vtpm.left)
  if (vtpm.right !== null && vtpm.right !== "" && Either.isLeft(decodeObjectJson(vtpm.right))) {
    return fail("vtpm_policy", "invalid", "must be a string holding a JSON object")
  }

  const metaData = str("metadata")
  if (metaData === undefined || Either.isLeft(decodeObjectJson(metaData))) {
    return fail("metadata", "invalid", "must be a string holding a JSON object, such as \"{}\"")
  }

  const imaKeys = str("ima_sign_verification_keys")
  if (imaKeys === undefined) return fail("ima_sign_verification_keys", "invalid", "must be a string (\"\" for none)")
  if (imaKeys.trim() !== "" && Either.isLeft(decodeImaKeyringJson(imaKeys))) {
    return fail("ima_sign_verification_keys", "invalid", "must be \"\" or a keyring JSON object {\"meta\": {\"version\": 1}, \"keyids\": [...], \"pubkeys\": [PEM, ...]}")
  }

  const revocationKey = str("revocation_key")
  if (revocationKey === undefined) return fail("revocation_key", "invalid", "must be a string (\"\" for none)")
  if (revocationKey !== "") {
    const key = Either.try(() => crypto.createPrivateKey(revocationKey))
    if (Either.isLeft(key) || key.right.asymmetricKeyType !== "rsa") {
      return fail("revocation_key", "invalid", "must be \"\" or an RSA private key in PEM (it signs revocation messages)")
    }
  }

  const algs = (k: string, known: ReadonlySet<string>): Either.Either<ReadonlyArray<string>, Fail> => {
    const list = body[k]
    if (!Array.isArray(list) || list.length === 0 || !list.every((x): x is string => typeof x === "string")) {
      return fail(k, "invalid", "must be a non-empty list of algorithm names")
    }
    const unknown = list.find((x) => !known.has(x))
    return unknown === undefined ? Either.right(list) : fail(k, "invalid", `names an unknown algorithm ${JSON.stringify(unknown)} (known: ${[...known].join(", ")})`)
  }
  const hashAlgs = algs("accept_tpm_hash_algs", HASH_ALGS)
  if (Either.isLeft(hashAlgs)) return Either.left(hashAlgs.left)
  const encAlgs = algs("accept_tpm_encryption_algs", ENCRYPTION_ALGS)
  if (Either.isLeft(encAlgs)) return Either.left(encAlgs.left)
  const signAlgs = algs("accept_tpm_signing_algs", SIGNING_ALGS)
  if (Either.isLeft(signAlgs)) return Either.left(signAlgs.left)

  const akTpm = str("ak_tpm")
  const akBytes = akTpm === undefined ? undefined : decodeBase64(akTpm)
  if (akTpm === undefined || akBytes === undefined) return fail("ak_tpm", "invalid", "must be base64 of the AK's TPM2B_PUBLIC")
  const ak = parseTpm2bPublic(akBytes)
  if (Either.isLeft(ak)) return fail("ak_tpm", "invalid", `is not a TPM2B_PUBLIC: ${ak.left.message}`)
  if (!isRestrictedSigningKey(ak.right) || Either.isLeft(publicKeyOf(ak.right))) {
    return fail("ak_tpm", "invalid", "is not a restricted signing key with a usable public key")
  }

  let mtlsCert: string | null = null
  if (mtlsRaw !== undefined && mtlsRaw !== null && mtlsRaw !== "disabled") {
    if (typeof mtlsRaw !== "string" || Either.isLeft(Either.try(() => new crypto.X509Certificate(mtlsRaw)))) {
      return fail("mtls_cert", "invalid", "must be the agent's certificate in PEM, \"disabled\" or null")
    }
    mtlsCert = mtlsRaw
  }

  const supported = optionalString("supported_version")
  if (Either.isLeft(supported)) return Either.left(supported.left)
  if (supported.right !== null && !/^\d{1,3}\.\d{1,3}$/.test(supported.right)) {
    return fail("supported_version", "invalid", "must be an API version such as \"2.2\"")
  }

  const policyName = (k: string): Either.Either<string | null, Fail> => {
    const n = optionalString(k)
    if (Either.isLeft(n)) return Either.left(n.left)
    // Keylime tests the name for truth: "" means no name
    if (n.right === null || n.right === "") return Either.right(null)
    return isPolicyName(n.right) ? Either.right(n.right) : fail(k, "invalid", POLICY_NAME_RULE)
  }
  const runtimePolicyName = policyName("runtime_policy_name")
  if (Either.isLeft(runtimePolicyName)) return Either.left(runtimePolicyName.left)

  const runtime = inlineRuntimePolicy(body, legacy, fail)
  if (Either.isLeft(runtime)) return Either.left(runtime.left)

  const mbPolicyName = policyName("mb_policy_name")
  if (Either.isLeft(mbPolicyName)) return Either.left(mbPolicyName.left)
  const mbField = has("mb_policy") || !mbByRefstate ? "mb_policy" : "mb_refstate"
  const mbRaw = body[mbField]
  let mbPolicy: string | null = null
  if (mbRaw !== undefined && mbRaw !== null) {
    if (typeof mbRaw !== "string") return fail(mbField, "invalid", "must be the reference state as a JSON string, or null")
    if (mbRaw.trim() !== "" && mbRaw.trim() !== "null") {
      if (Either.isLeft(decodeAnyJson(mbRaw))) return fail(mbField, "not_json", "is not JSON")
      if (Either.isLeft(decodeObjectJson(mbRaw))) return fail(mbField, "invalid", "must be a JSON object (the reference state)")
      mbPolicy = mbRaw
    }
  }

  return Either.right({
    v: vText,
    ip,
    port: port.right,
    tpmPolicy,
    vtpmPolicy: vtpm.right,
    metaData,
    imaSignVerificationKeys: imaKeys,
    revocationKey,
    acceptTpmHashAlgs: hashAlgs.right,
    acceptTpmEncryptionAlgs: encAlgs.right,
    acceptTpmSigningAlgs: signAlgs.right,
    akTpm,
    mtlsCert,
    supportedVersion: supported.right,
    runtimePolicyName: runtimePolicyName.right,
    runtimePolicy: runtime.right,
    mbPolicyName: mbPolicyName.right,
    mbPolicy,
    model
  })
}

const inlineRuntimePolicy = (
  body: Body,
  legacy: boolean,
  fail: (field: string, problem: Fail["problem"], reason: string) => Either.Either<never, Fail>
): Either.Either<InlineRuntimePolicy, Fail> => {
  const bytesOf = (k: string): Either.Either<Uint8Array | null, Fail> => {
    const v = body[k]
    if (v === undefined || v === null || v === "") return Either.right(null)
    if (typeof v !== "string") return fail(k, "invalid", "must be base64 text or null")
    const bytes = decodeBase64(v)
    return bytes === undefined ? fail(k, "invalid", "is not valid base64") : Either.right(bytes)
  }
  const key = bytesOf("runtime_policy_key")
  if (Either.isLeft(key)) return Either.left(key.left)
  const signature = bytesOf("runtime_policy_sig")
  if (Either.isLeft(signature)) return Either.left(signature.left)
  if (signature.right !== null && key.right === null) {
    return fail("runtime_policy_sig", "invalid", "needs runtime_policy_key (they must be given together)")
  }

  if (legacy) {
    const allowlist = body["allowlist"]
    if (typeof allowlist !== "string") return fail("allowlist", "invalid", "must be the allowlist JSON as a string")
    return Either.right(
      allowlist.trim() === "" || allowlist.trim() === "null"
        ? { _tag: "None" }
        : { _tag: "Inline", text: allowlist, key: key.right, signature: signature.right, legacy: true }
    )
  }
  const raw = body["runtime_policy"]
  if (typeof raw !== "string") return fail("runtime_policy", "invalid", "must be a string: base64 of the policy JSON, \"\" for none")
  if (raw === "") {
    return key.right === null ? Either.right({ _tag: "None" }) : fail("runtime_policy_key", "invalid", "is given without a runtime_policy")
  }
  // Keylime's lenient b64decode turns text such as "%%%" into an empty policy; attest refuses it
  const bytes = decodeBase64(raw)
  if (bytes === undefined) return fail("runtime_policy", "invalid", "is not valid base64 (base64 of the policy JSON, \"\" for none)")
  const text = new TextDecoder("utf-8", { fatal: true })
  const decoded = Either.try(() => text.decode(bytes))
  if (Either.isLeft(decoded)) return fail("runtime_policy", "invalid", "is not UTF-8 text once base64-decoded")
  return Either.right({ _tag: "Inline", text: decoded.right, key: key.right, signature: signature.right, legacy: false })
}
