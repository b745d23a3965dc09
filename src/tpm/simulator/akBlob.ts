/**
 * The simulator's opaque AK private blob (`SavedAk.private`): the AK's PKCS#8 key sealed with
 * AES-256-GCM under a key derived from the simulator seed, with the AK's TPM2B_PUBLIC as
 * associated data. Only the simulator with the same seed can load it, and only with its own public
 * area, like a TPM2B_PRIVATE under its parent.
 *   u8 version(1) ‖ iv[12] ‖ tag[16] ‖ ciphertext
 */
import { createCipheriv, createDecipheriv, createPrivateKey, type KeyObject, randomBytes } from "node:crypto"
import { Either } from "effect"
import { deriveBytes } from "./derive.js"

const VERSION = 1

const wrapKey = (seed: Uint8Array): Uint8Array => deriveBytes(seed, "attest simulator AK wrap", 32)

export const sealAk = (seed: Uint8Array, akPublic: Uint8Array, key: KeyObject, iv: Uint8Array = randomBytes(12)): Uint8Array => {
  const pkcs8 = key.export({ format: "der", type: "pkcs8" })
  const cipher = createCipheriv("aes-256-gcm", wrapKey(seed), iv)
  cipher.setAAD(akPublic)
  const ct = Buffer.concat([cipher.update(pkcs8), cipher.final()])
  return new Uint8Array(Buffer.concat([Buffer.of(VERSION), iv, cipher.getAuthTag(), ct]))
}

export const unsealAk = (seed: Uint8Array, akPublic: Uint8Array, blob: Uint8Array): Either.Either<KeyObject, string> => {
  if (blob.length < 1 + 12 + 16 + 1 || blob[0] !== VERSION) return Either.left("not an AK blob of this simulator")
  try {
    const decipher = createDecipheriv("aes-256-gcm", wrapKey(seed), blob.subarray(1, 13))
    decipher.setAAD(akPublic)
    decipher.setAuthTag(blob.subarray(13, 29))
    const pkcs8 = Buffer.concat([decipher.update(blob.subarray(29)), decipher.final()])
    return Either.right(createPrivateKey({ key: pkcs8, format: "der", type: "pkcs8" }))
  } catch {
    return Either.left("the AK blob was not sealed by this simulator (or does not match its public area)")
  }
}
