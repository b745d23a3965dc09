/**
 * DSSE envelopes (github.com/secure-systems-lab/dsse, protocol v1) for signed runtime policies, as
 * keylime_sign_runtime_policy writes them: payloadType `application/vnd.keylime+json`, ECDSA over
 * SHA-256 of PAE, keyid = hex SHA-256 of the signer's public key PEM. Also Keylime's detached
 * `runtime_policy_sig` / `runtime_policy_key` check.
 */
import * as crypto from "node:crypto"
import { Data, Either, Schema } from "effect"

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
  const t = Buffer.from(payloadType, "utf8")
  return new Uint8Array(Buffer.concat([Buffer.from(`DSSEv1 ${t.length} `), t, Buffer.from(` ${body.length} `), body]))
}

const tryKey = <A>(f: () => A): A | undefined => {
  try {
    return f()
  } catch {
    return undefined
  }
}

/** Public key from PEM/DER text or bytes: SPKI key or X.509 certificate. */
export const verificationKeyFrom = (data: Uint8Array | string): crypto.KeyObject | undefined => {
  const buf = typeof data === "string" ? Buffer.from(data) : Buffer.from(data)
  return (
    tryKey(() => new crypto.X509Certificate(buf).publicKey) ??
    tryKey(() => crypto.createPublicKey(buf.toString("latin1"))) ??
    tryKey(() => crypto.createPublicKey({ key: buf, format: "der", type: "spki" }))
  )
}

/** Keylime's keyid: SHA-256 over the public key's PEM (SubjectPublicKeyInfo). */
export const dsseKeyId = (key: crypto.KeyObject): string =>
  crypto.createHash("sha256").update(key.export({ format: "pem", type: "spki" }).toString()).digest("hex")

const b64 = /^[A-Za-z0-9+/_-]*={0,2}$/

/** Verifies the envelope with the key; returns the payload bytes. Any one valid signature suffices. */
export const verifyEnvelope = (env: DsseEnvelope, key: crypto.KeyObject): Either.Either<Uint8Array, DsseError> => {
  if (!b64.test(env.payload)) return Either.left(new DsseError({ reason: "payload is not base64" }))
  if (env.signatures.length === 0) return Either.left(new DsseError({ reason: "the envelope has no signatures" }))
  const body = Buffer.from(env.payload, "base64")
  const msg = pae(env.payloadType, body)
  for (const s of env.signatures) {
    if (!b64.test(s.sig)) continue
    const ok = tryKey(() => crypto.verify("sha256", msg, key, Buffer.from(s.sig, "base64")))
    if (ok === true) return Either.right(new Uint8Array(body))
  }
  return Either.left(new DsseError({ reason: "no signature in the envelope verifies with the given key" }))
}

/** Signs `payload` into an envelope with an EC (or RSA) private key. */
export const signEnvelope = (
  payload: Uint8Array,
  privateKey: crypto.KeyObject,
  payloadType: string = KEYLIME_PAYLOAD_TYPE
): Either.Either<DsseEnvelope, DsseError> => {
  const sig = tryKey(() => crypto.sign("sha256", pae(payloadType, payload), privateKey))
  if (sig === undefined) return Either.left(new DsseError({ reason: "signing failed: the key cannot sign" }))
  return Either.right({
    payload: Buffer.from(payload).toString("base64"),
    payloadType,
    signatures: [{ keyid: dsseKeyId(crypto.createPublicKey(privateKey)), sig: sig.toString("base64") }]
  })
}

/** Keylime's detached `runtime_policy_sig` over the policy bytes, checked with `runtime_policy_key` (EC key or certificate). */
export const verifyDetached = (policy: Uint8Array, signature: Uint8Array, keyData: Uint8Array | string): Either.Either<void, DsseError> => {
  const key = verificationKeyFrom(keyData)
  if (key === undefined) return Either.left(new DsseError({ reason: "runtime_policy_key is not a public key or certificate" }))
  const ok = tryKey(() => crypto.verify("sha256", policy, key, signature))
  return ok === true ? Either.void : Either.left(new DsseError({ reason: "Runtime policy failed detached signature verification!" }))
}
