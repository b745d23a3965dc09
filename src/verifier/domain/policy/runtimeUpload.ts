/**
 * A runtime policy as uploaded (allowlists POST/PUT, or inline at agent creation) → what is stored.
 * Signatures are checked here, once: a DSSE envelope with `runtime_policy_key`, or Keylime's
 * detached `runtime_policy_sig` + `runtime_policy_key`; with `require_allow_list_signatures` an
 * unsigned policy is refused. What is stored is the plain policy JSON (a DSSE envelope's verified
 * payload), so loading never needs the key again. Pure.
 */
import { Either } from "effect"
import { emptyRuntimePolicy, runtimePolicyFromLegacyJson } from "../../../../schemas/RuntimePolicy.js"
import { decodeDsseEnvelopeJson, verificationKeyFrom, verifyDetached, verifyEnvelope } from "../../../ima/dsse.js"
import { InvalidRuntimePolicy } from "../errors.js"
import { pythonJsonDumps } from "../../../attestation/pythonJson.js"
import type { RuntimePolicyData } from "../repo/PolicyRepo.js"
import { type LoadedRuntimePolicy, loadRuntime } from "./loadRuntime.js"

export interface RuntimePolicyUpload {
  /** The document as sent (already base64-decoded). */
  readonly text: string
  /** Its UTF-8 bytes when the caller has them (the base64 decoded): the checksum is taken of these. */
  readonly bytes?: Uint8Array | undefined
  /** `runtime_policy_key`: public key or certificate, PEM or DER (already base64-decoded). */
  readonly key: Uint8Array | null
  /** `runtime_policy_sig`: detached signature over `text` (already base64-decoded). */
  readonly signature: Uint8Array | null
  /** A 2.1-era `allowlist`: the old `{"hashes": …}` JSON is converted to a v1 policy. */
  readonly legacy?: boolean
  readonly tpmPolicy?: string | null
}

export interface PreparedRuntimePolicy {
  readonly loaded: LoadedRuntimePolicy
  /** The row to store. */
  readonly data: RuntimePolicyData
}

export interface UploadOptions {
  /** `require_allow_list_signatures`. */
  readonly requireSignatures: boolean
}

/** Keylime's EMPTY_RUNTIME_POLICY as its json.dumps writes it: stored for agents given no policy. */
export const EMPTY_RUNTIME_POLICY_TEXT = pythonJsonDumps(emptyRuntimePolicy())

/**
 * An envelope has a `payload` member: a text in which neither "payload" nor a \u escape (which could
 * spell it) occurs is none, and is not parsed a first time just to learn that (10 MB: ~0.1 s).
 */
const mayBeEnvelope = (text: string) => text.includes("payload") || text.includes("\\u")

const isEnvelope = (text: string) => {
  if (!mayBeEnvelope(text)) return undefined
  const env = decodeDsseEnvelopeJson(text)
  return Either.isRight(env) ? env.right : undefined
}

const looksLegacy = (text: string) => /"hashes"\s*:/.test(text) && !/"digests"\s*:/.test(text)

export const prepareRuntimePolicy = (
  name: string,
  upload: RuntimePolicyUpload,
  options: UploadOptions
): Either.Either<PreparedRuntimePolicy, InvalidRuntimePolicy> => {
  const refuse = (field: string, problem: InvalidRuntimePolicy["problem"], reason: string, keylimeDetail?: string) =>
    Either.left(
      new InvalidRuntimePolicy({ name, field, problem, reason, ...(keylimeDetail === undefined ? {} : { keylimeDetail }) })
    )

  const key = upload.key === null ? undefined : verificationKeyFrom(upload.key)
  if (upload.key !== null && key === undefined) {
    return refuse("runtime_policy_key", "invalid", "is not a public key or certificate (PEM or DER, base64-encoded)")
  }

  let text = upload.text
  // the bytes as sent are the text's only while neither the envelope nor the legacy form replaces it
  let bytes = upload.bytes
  const envelope = isEnvelope(text)
  if (envelope !== undefined) {
    if (key === undefined) return refuse("runtime_policy_key", "key_required", "is required to verify the signed (DSSE) policy")
    const payload = verifyEnvelope(envelope, key)
    if (Either.isLeft(payload)) return refuse("runtime_policy", "bad_signature", `DSSE signature does not verify: ${payload.left.reason}`)
    const decoded = Either.try(() => new TextDecoder("utf-8", { fatal: true }).decode(payload.right))
    if (Either.isLeft(decoded)) return refuse("runtime_policy", "invalid", "DSSE payload is not UTF-8 text")
    text = decoded.right
    bytes = undefined
  } else if (upload.signature !== null) {
    if (upload.key === null) return refuse("runtime_policy_key", "key_required", "is required with runtime_policy_sig")
    const checked = verifyDetached(upload.bytes ?? new TextEncoder().encode(upload.text), upload.signature, upload.key)
    if (Either.isLeft(checked)) return refuse("runtime_policy_sig", "bad_signature", `does not verify: ${checked.left.reason}`)
  } else if (options.requireSignatures) {
    return upload.key === null
      ? refuse("runtime_policy_key", "key_required", "is required: require_allow_list_signatures is on")
      : refuse("runtime_policy", "not_signed", "is not signed (a DSSE envelope or runtime_policy_sig is required)")
  } else if (upload.key !== null) {
    // Keylime ignores the key here; a key that checks nothing would only suggest the policy was verified
    return refuse("runtime_policy_key", "invalid", "is given but there is no signature to check (the policy is not a DSSE envelope and runtime_policy_sig is absent)")
  }

  if (upload.legacy === true && looksLegacy(text)) {
    const converted = runtimePolicyFromLegacyJson(text)
    if (Either.isLeft(converted)) return refuse("allowlist", "malformatted", `is not a runtime policy or a JSON allowlist: ${converted.left.message}`)
    text = pythonJsonDumps(converted.right)
    bytes = undefined
  }

  const loaded = loadRuntime(text, bytes)
  if (Either.isLeft(loaded)) {
    return refuse(loaded.left.field, loaded.left.kind, loaded.left.reason, loaded.left.keylimeDetail)
  }
  return Either.right({
    loaded: loaded.right,
    data: {
      runtime_policy: text,
      tpm_policy: upload.tpmPolicy ?? null,
      checksum: loaded.right.checksum,
      has_policy: loaded.right.hasPolicy,
      digest_count: loaded.right.compiled.digests.size
    }
  })
}

/** The row stored under an agent's id when it is added without a runtime policy. */
export const emptyRuntimePolicyData = (): PreparedRuntimePolicy => {
  // Keylime's own empty policy always loads; failing here is a defect of this module
  const loaded = Either.getOrThrowWith(loadRuntime(EMPTY_RUNTIME_POLICY_TEXT), (e) => new Error(`empty runtime policy: ${e.reason}`))
  return {
    loaded,
    data: {
      runtime_policy: EMPTY_RUNTIME_POLICY_TEXT,
      tpm_policy: null,
      checksum: loaded.checksum,
      has_policy: false,
      digest_count: 0
    }
  }
}
