/**
 * Keylime payload encryption (`crypto.encrypt_aead` / `decrypt_aead`): AES-GCM with the key size
 * taken from K (16 → AES-128, 32 → AES-256), no AAD, wire layout IV(16) ‖ ciphertext ‖ tag(16).
 */
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto"
import { Either } from "effect"
import { KeyError } from "./errors.js"

const ivBytes = 16
const tagBytes = 16

const cipherFor = (k: Uint8Array): Either.Either<"aes-128-gcm" | "aes-256-gcm", KeyError> =>
  k.length === 16
    ? Either.right("aes-128-gcm")
    : k.length === 32
    ? Either.right("aes-256-gcm")
    : Either.left(new KeyError({ reason: "key", message: `payload key must be 16 or 32 bytes, got ${k.length}` }))

export const encryptPayload = (
  k: Uint8Array,
  plaintext: Uint8Array,
  iv: Uint8Array = new Uint8Array(randomBytes(ivBytes))
): Either.Either<Uint8Array, KeyError> =>
  Either.flatMap(cipherFor(k), (alg) =>
    Either.try({
      try: () => {
        const c = createCipheriv(alg, k, iv, { authTagLength: tagBytes })
        const body = Buffer.concat([c.update(plaintext), c.final()])
        return new Uint8Array(Buffer.concat([iv, body, c.getAuthTag()]))
      },
      catch: (e) => new KeyError({ reason: "encrypt", message: `payload encryption failed: ${String(e)}` })
    }))

export const decryptPayload = (k: Uint8Array, data: Uint8Array): Either.Either<Uint8Array, KeyError> => {
  if (data.length < ivBytes + tagBytes) {
    return Either.left(new KeyError({ reason: "length", message: `payload is ${data.length} bytes, shorter than IV and tag (32)` }))
  }
  return Either.flatMap(cipherFor(k), (alg) =>
    Either.try({
      try: () => {
        const d = createDecipheriv(alg, k, data.subarray(0, ivBytes), { authTagLength: tagBytes })
        d.setAuthTag(data.subarray(data.length - tagBytes))
        return new Uint8Array(Buffer.concat([d.update(data.subarray(ivBytes, data.length - tagBytes)), d.final()]))
      },
      catch: () => new KeyError({ reason: "decrypt", message: "payload decryption failed: authentication tag mismatch or wrong key" })
    }))
}
