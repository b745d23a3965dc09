/** Signing DSSE envelopes (`attest policy sign`, tests) with a node private key; verification is dsse.ts. */
import * as crypto from "node:crypto"
import { Either } from "effect"
import { toBase64 } from "../crypto/encoding.js"
import { type DsseEnvelope, DsseError, dsseKeyId, KEYLIME_PAYLOAD_TYPE, pae, verificationKeyFrom } from "./dsse.js"

/** Signs `payload` into an envelope with an EC (or RSA) private key. */
export const signEnvelope = (
  payload: Uint8Array,
  privateKey: crypto.KeyObject,
  payloadType: string = KEYLIME_PAYLOAD_TYPE
): Either.Either<DsseEnvelope, DsseError> => {
  let sig: Uint8Array
  let publicDer: Uint8Array
  try {
    sig = crypto.sign("sha256", pae(payloadType, payload), privateKey)
    publicDer = crypto.createPublicKey(privateKey).export({ format: "der", type: "spki" })
  } catch {
    return Either.left(new DsseError({ reason: "signing failed: the key cannot sign" }))
  }
  const pub = verificationKeyFrom(publicDer)
  return Either.right({
    payload: toBase64(payload),
    payloadType,
    signatures: [{ keyid: pub === undefined ? "" : dsseKeyId(pub), sig: toBase64(sig) }]
  })
}
