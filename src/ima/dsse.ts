/**
 * DSSE envelopes (github.com/secure-systems-lab/dsse, protocol v1) for signed runtime policies, as
 * keylime_sign_runtime_policy writes them: payloadType `application/vnd.keylime+json`, ECDSA over
 * SHA-256 of PAE, keyid = hex SHA-256 of the signer's public key PEM. Also Keylime's detached
 * `runtime_policy_sig` / `runtime_policy_key` check. Verification goes through the crypto port;
 * signing (node keys) is dsseSign.ts.
 */
import { Data, Either, Schema } from "effect"
import { cryptoPort } from "../crypto/active.js"
import { base64Bytes, concat, toHex, utf8Bytes } from "../crypto/encoding.js"
import type { PublicKey, SignatureScheme } from "../crypto/port.js"
import { spkiDer } from "../crypto/spki.js"
import { toPem } from "../crypto/pem.js"

export const KEYLIME_PAYLOAD_TYPE = "application/vnd.keylime+json"

export const DsseSignature = Schema.Struct({ keyid: Schema.optional(Schema.String), sig: Schema.String })
export const DsseEnvelope = Schema.Struct({
  payload: Schema.String,
  payloadType: Schema.String,
  signatures: Schema.Array(DsseSignature)
})
export type DsseEnvelope = typeof DsseEnvelope.Type
export const decodeDsseEnvelopeJson = Schema.decodeUnknownEither(Schema.parseJson(DsseEnvelope))

export class DsseError extends Data.TaggedError("DsseError")<{ readonly reason: string }> {
  override get message(): string {
    return this.reason
  }
}

/** PAE(type, body) = "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body, lengths in ASCII decimal bytes. */
export const pae = (payloadType: string, body: Uint8Array): Uint8Array => {
  const t = utf8Bytes(payloadType)
  return concat(utf8Bytes(`DSSEv1 ${t.length} `), t, utf8Bytes(` ${body.length} `), body)
}

/** Public key from PEM/DER text or bytes: SPKI key or X.509 certificate. */
export const verificationKeyFrom = (data: Uint8Array | string): PublicKey | undefined => cryptoPort().publicKeyFrom(data)

/** Keylime's keyid: SHA-256 over the public key's PEM (SubjectPublicKeyInfo). */
export const dsseKeyId = (key: PublicKey): string =>
  key.type === "other" ? "" : toHex(cryptoPort().digest("sha256", utf8Bytes(toPem(spkiDer(key), "PUBLIC KEY"))))

const SHA256_ECDSA: SignatureScheme = { alg: "ecdsa", hash: "sha256", encoding: "der" }
const SHA256_RSA: SignatureScheme = { alg: "rsa-pkcs1", hash: "sha256" }

/** A SHA-256 signature as keylime_sign_runtime_policy makes them: DER ECDSA, or PKCS#1 v1.5 with an RSA key. */
export const verifySha256 = (key: PublicKey, message: Uint8Array, signature: Uint8Array): boolean =>
  key.type !== "other" && cryptoPort().verify(key, key.type === "ec" ? SHA256_ECDSA : SHA256_RSA, message, signature)

const b64 = /^[A-Za-z0-9+/_-]*={0,2}$/

/** Verifies the envelope with the key; returns the payload bytes. Any one valid signature suffices. */
export const verifyEnvelope = (env: DsseEnvelope, key: PublicKey): Either.Either<Uint8Array, DsseError> => {
  if (!b64.test(env.payload)) return Either.left(new DsseError({ reason: "payload is not base64" }))
  if (env.signatures.length === 0) return Either.left(new DsseError({ reason: "the envelope has no signatures" }))
  const body = base64Bytes(env.payload)
  const msg = pae(env.payloadType, body)
  for (const s of env.signatures) {
    if (!b64.test(s.sig)) continue
    if (verifySha256(key, msg, base64Bytes(s.sig))) return Either.right(body)
  }
  return Either.left(new DsseError({ reason: "no signature in the envelope verifies with the given key" }))
}

/** Keylime's detached `runtime_policy_sig` over the policy bytes, checked with `runtime_policy_key` (EC key or certificate). */
export const verifyDetached = (policy: Uint8Array, signature: Uint8Array, keyData: Uint8Array | string): Either.Either<void, DsseError> => {
  const key = verificationKeyFrom(keyData)
  if (key === undefined) return Either.left(new DsseError({ reason: "runtime_policy_key is not a public key or certificate" }))
  return verifySha256(key, policy, signature) ? Either.void : Either.left(new DsseError({ reason: "Runtime policy failed detached signature verification!" }))
}
