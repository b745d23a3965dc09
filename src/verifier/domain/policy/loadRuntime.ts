/**
 * THE one place the verifier turns runtime-policy text into a compiled policy. Every caller
 * (uploads, agent creation, the policy cache) goes through `loadRuntime`.
 *
 * A policy the one-pass scan of src/ima (scanRuntimePolicy + compileRuntimePolicyDocument, what
 * `loadRuntimePolicy` does) compiles is taken from it: about one JSON.parse of the text. Anything
 * else (not JSON, a refused document, an envelope-like `payload`) goes the Schema decode of
 * schemas/RuntimePolicy.ts and `compilePolicy`, which words the refusal as Keylime does; the two
 * accept and refuse the same documents (test/ima/loadProperties.test.ts). The Schema path decoded
 * every digest through Schema: ~0.5 s of a 100k-digest upload's ~1 s.
 */
import * as crypto from "node:crypto"
import { Either, ParseResult, Schema } from "effect"
import { decodeRuntimePolicy, Generator, type RuntimePolicy } from "../../../../schemas/RuntimePolicy.js"
import { compileRuntimePolicyDocument } from "../../../ima/compileDocument.js"
import { type CompiledPolicy, compilePolicy } from "../../../ima/policy.js"
import { scanRuntimePolicy } from "../../../ima/scanPolicy.js"

export interface LoadedRuntimePolicy {
  readonly compiled: CompiledPolicy
  /** Hex SHA-256 of the text: the cache key, and what Keylime stores as `checksum`. */
  readonly checksum: string
  /** More than Keylime's empty policy (meta.generator > EmptyAllowList): `has_runtime_policy`. */
  readonly hasPolicy: boolean
}

export interface RuntimePolicyLoadError {
  /** `runtime_policy` or `runtime_policy.<path>` (e.g. runtime_policy.ima.log_hash_alg). */
  readonly field: string
  /** Completes "<field> <reason>". */
  readonly reason: string
  /** Keylime's ImaValidationError text for the same refusal. */
  readonly keylimeText: string
  readonly kind: "not_json" | "malformatted"
  /** The part after "Runtime policy is malformatted: " (malformatted only). */
  readonly keylimeDetail?: string
}

/** Keylime's RUNTIME_POLICY_SCHEMA `required`, in its order (jsonschema names the first missing). */
const REQUIRED = ["meta", "release", "digests", "excludes", "keyrings", "ima", "ima-buf", "verification-keys"] as const

const decodeJson = Schema.decodeUnknownEither(Schema.parseJson())

/** Hex SHA-256 of the text's UTF-8, or of `bytes` when the caller has them (they must be the text's UTF-8). */
export const checksumOf = (text: string, bytes?: Uint8Array): string =>
  bytes === undefined ? crypto.createHash("sha256").update(text, "utf8").digest("hex") : crypto.hash("sha256", bytes, "hex")

const malformatted = (field: string, reason: string, detail: string): Either.Either<never, RuntimePolicyLoadError> =>
  Either.left({ field, reason, kind: "malformatted", keylimeDetail: detail, keylimeText: `Runtime policy is malformatted: ${detail}` })

/**
 * Decodes and compiles policy text (a plain v1 runtime policy, not a DSSE envelope). `bytes`, when
 * given, are the text's UTF-8 (an upload's decoded base64): the checksum is taken of them instead of
 * encoding the text again.
 */
export const loadRuntime = (text: string, bytes?: Uint8Array): Either.Either<LoadedRuntimePolicy, RuntimePolicyLoadError> => {
  const scanned = scanRuntimePolicy(text)
  if (scanned !== undefined && !hasPayload(scanned.doc)) {
    const compiled = compileRuntimePolicyDocument(scanned.doc, scanned.tables)
    if (Either.isRight(compiled)) {
      return Either.right({ compiled: compiled.right.policy, checksum: checksumOf(text, bytes), hasPolicy: compiled.right.hasRuntimePolicy })
    }
  }
  return loadBySchema(text)
}

/** Keylime's test for a DSSE envelope (a truthy `payload`): such a text is left to the Schema path, as before. */
const hasPayload = (doc: Readonly<Record<string, unknown>>): boolean => Boolean(Object.getOwnPropertyDescriptor(doc, "payload")?.value)

/** The Schema decode and compile: Keylime's refusal texts for every problem. */
const loadBySchema = (text: string): Either.Either<LoadedRuntimePolicy, RuntimePolicyLoadError> => {
  const json = decodeJson(text)
  if (Either.isLeft(json)) {
    return Either.left({
      field: "runtime_policy",
      reason: "is not valid JSON",
      kind: "not_json",
      keylimeText: "Runtime policy is not valid JSON!"
    })
  }
  const doc = json.right
  if (typeof doc !== "object" || doc === null || Array.isArray(doc)) {
    return malformatted("runtime_policy", "must be a JSON object", `${text.trim().slice(0, 40)} is not of type 'object'`)
  }
  const missing = REQUIRED.find((k) => !Object.prototype.hasOwnProperty.call(doc, k))
  if (missing !== undefined) {
    return malformatted(`runtime_policy.${missing}`, "is required", `'${missing}' is a required property`)
  }
  const decoded = decodeRuntimePolicy(doc)
  if (Either.isLeft(decoded)) {
    const issue = ParseResult.ArrayFormatter.formatErrorSync(decoded.left)[0]
    const path = issue === undefined ? "" : issue.path.map(String).join(".")
    const field = path === "" ? "runtime_policy" : `runtime_policy.${path}`
    const reason = issue?.message ?? "does not match the runtime policy format"
    return malformatted(field, reason, `${field}: ${reason}`)
  }
  return fromDecoded(decoded.right, text)
}

const fromDecoded = (policy: RuntimePolicy, text: string): Either.Either<LoadedRuntimePolicy, RuntimePolicyLoadError> => {
  const compiled = compilePolicy(policy)
  if (Either.isLeft(compiled)) {
    const field = `runtime_policy.${compiled.left.field}`
    return malformatted(field, compiled.left.reason, `${field}: ${compiled.left.reason}`)
  }
  return Either.right({
    compiled: compiled.right,
    checksum: checksumOf(text),
    hasPolicy: (policy.meta.generator ?? Generator.Unknown) > Generator.EmptyAllowList
  })
}
