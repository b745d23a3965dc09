/**
 * The one path from an uploaded runtime policy to a compiled one, for the verifier at upload and on
 * a cache miss: checksum, JSON, the DSSE envelope (keylime/ima/ima.py `verify_runtime_policy` rules
 * and texts), then `compileRuntimePolicyDocument`. Cost: about one JSON.parse plus one pass over the
 * digests (bench/policy-load.ts).
 */
import { Either, Schema } from "effect"
import { cryptoPort } from "../crypto/active.js"
import { base64Bytes, strictUtf8, toHex, utf8Bytes } from "../crypto/encoding.js"
import { type CompiledRuntimePolicy, compileRuntimePolicyDocument, malformatted, RuntimePolicyError, schemaIssue } from "./compileDocument.js"
import { DsseEnvelope, dsseKeyId, verificationKeyFrom, verifyEnvelope } from "./dsse.js"
import { scanRuntimePolicy } from "./scanPolicy.js"

export interface RuntimePolicyLoadOptions {
  /**
   * Keylime's `require_allow_list_signatures`: only a DSSE envelope that verifies with `key` is
   * accepted.
   */
  readonly requireSignature?: boolean | undefined
  /**
   * `runtime_policy_key`: the signer's public key or X.509 certificate (PEM or DER bytes). When
   * given, the policy must be an envelope that verifies with it, required or not (Keylime ignores a
   * key unless signatures are required).
   */
  readonly key?: string | Uint8Array | undefined
}

export interface LoadedRuntimePolicy extends CompiledRuntimePolicy {
  /** Hex SHA-256 of the uploaded bytes, envelope included (Keylime's `checksum` column): the cache key. */
  readonly checksum: string
  /** Key id (hex SHA-256 of the key's PEM, as Keylime names it) of the key that verified the envelope. */
  readonly signedBy: string | undefined
}

const parseJson = (text: string, path: string): Either.Either<unknown, RuntimePolicyError> =>
  Either.try({
    try: (): unknown => JSON.parse(text),
    catch: (e) => new RuntimePolicyError({ kind: "NotJson", path, reason: e instanceof Error ? e.message : String(e) })
  })

/** Keylime's test for an envelope: an object whose `payload` is truthy. */
const envelopePayload = (doc: unknown): unknown =>
  typeof doc === "object" && doc !== null && !Array.isArray(doc) ? Object.getOwnPropertyDescriptor(doc, "payload")?.value : undefined

const decodeDsseEnvelope = Schema.decodeUnknownEither(DsseEnvelope)

const BASE64 = /^[A-Za-z0-9+/_-]*={0,2}$/

/**
 * Uploaded policy (the text, or its bytes: the request's base64 decoded) → compiled policy with its
 * checksum, or why not. Never throws.
 */
export const loadRuntimePolicy = (
  upload: string | Uint8Array,
  options: RuntimePolicyLoadOptions = {}
): Either.Either<LoadedRuntimePolicy, RuntimePolicyError> => {
  const checksum = toHex(cryptoPort().digest("sha256", typeof upload === "string" ? utf8Bytes(upload) : upload))
  const text = typeof upload === "string" ? upload : strictUtf8(upload)
  if (text === undefined) return Either.left(new RuntimePolicyError({ kind: "NotJson", path: "", reason: "the policy is not UTF-8 text" }))
  const { key, requireSignature = false } = options
  // The plain unsigned policy, nearly every upload: one scan, no JSON.parse of the digests.
  if (!requireSignature && key === undefined) {
    const scanned = scanRuntimePolicy(text)
    if (scanned !== undefined && !envelopePayload(scanned.doc)) {
      return Either.map(compileRuntimePolicyDocument(scanned.doc, scanned.tables), (compiled) => ({ ...compiled, checksum, signedBy: undefined }))
    }
  }
  const parsed = parseJson(text, "")
  if (Either.isLeft(parsed)) return Either.left(parsed.left)
  if (requireSignature && key === undefined) return Either.left(new RuntimePolicyError({ kind: "KeyMissing", path: "", reason: "no runtime_policy_key" }))

  const doc = parsed.right
  let signedBy: string | undefined
  if (envelopePayload(doc)) {
    const env = decodeDsseEnvelope(doc)
    if (Either.isLeft(env)) return Either.left(schemaIssue(env.left))
    let payload: Uint8Array
    if (key !== undefined) {
      const pub = verificationKeyFrom(key)
      if (pub === undefined) return Either.left(new RuntimePolicyError({ kind: "SignatureInvalid", path: "", reason: "runtime_policy_key is not a public key or certificate" }))
      const verified = verifyEnvelope(env.right, pub)
      if (Either.isLeft(verified)) return Either.left(new RuntimePolicyError({ kind: "SignatureInvalid", path: "", reason: verified.left.reason }))
      payload = verified.right
      signedBy = dsseKeyId(pub)
    } else {
      // Neither required nor keyed: Keylime takes the payload as it is.
      if (!BASE64.test(env.right.payload)) return Either.left(malformatted("payload", "is not base64"))
      payload = base64Bytes(env.right.payload)
    }
    const payloadText = strictUtf8(payload)
    if (payloadText === undefined) return Either.left(new RuntimePolicyError({ kind: "NotJson", path: "payload", reason: "the payload is not UTF-8 text" }))
    return Either.map(loadDocument(payloadText, "payload"), (compiled) => ({ ...compiled, checksum, signedBy }))
  }
  if (requireSignature || key !== undefined) {
    return Either.left(new RuntimePolicyError({ kind: "NotSigned", path: "", reason: "the policy is not a DSSE envelope" }))
  }
  return Either.map(compileRuntimePolicyDocument(doc), (compiled) => ({ ...compiled, checksum, signedBy }))
}

/** A policy document's text (an envelope's payload) → compiled: the scan when it can, else JSON.parse. */
const loadDocument = (text: string, path: string): Either.Either<CompiledRuntimePolicy, RuntimePolicyError> => {
  const scanned = scanRuntimePolicy(text)
  if (scanned !== undefined) return compileRuntimePolicyDocument(scanned.doc, scanned.tables)
  const parsed = parseJson(text, path)
  return Either.isLeft(parsed) ? Either.left(parsed.left) : compileRuntimePolicyDocument(parsed.right)
}
