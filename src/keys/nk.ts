/**
 * The agent's NK: an RSA-2048 key pair whose public half (PEM) the tenant and verifier use to
 * encrypt U and V with RSA-OAEP, MGF1-SHA-1, SHA-1, no label (Keylime `crypto.rsa_encrypt`).
 * The private half stays in memory.
 */
import { constants, createPublicKey, generateKeyPair, generateKeyPairSync, privateDecrypt, publicEncrypt, type KeyObject } from "node:crypto"
import { Effect, Either } from "effect"
import { KeyError } from "./errors.js"

export interface Nk {
  readonly privateKey: KeyObject
  /** SubjectPublicKeyInfo PEM, exactly the text served as `pubkey` and hashed into PCR 16. */
  readonly publicPem: string
}

export const generateNk = (bits = 2048): Nk => {
  const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: bits, publicExponent: 65537 })
  return { privateKey, publicPem: publicKey.export({ type: "spki", format: "pem" }).toString() }
}

/** The same, generated on libuv's thread pool so several agents starting at once use every core. */
export const generateNkAsync = (bits = 2048): Effect.Effect<Nk> =>
  Effect.async<Nk>((resume) => {
    generateKeyPair("rsa", { modulusLength: bits, publicExponent: 65537 }, (error, publicKey, privateKey) => {
      resume(error ? Effect.die(error) : Effect.succeed({ privateKey, publicPem: publicKey.export({ type: "spki", format: "pem" }).toString() }))
    })
  })

/** Tenant / verifier side: RSA-OAEP-SHA1 of a key half for the agent's `pubkey`. */
export const encryptForAgent = (publicPem: string, key: Uint8Array): Either.Either<Uint8Array, KeyError> =>
  Either.try({
    try: () =>
      new Uint8Array(
        publicEncrypt({ key: createPublicKey(publicPem), padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: "sha1" }, key)
      ),
    catch: (e) => new KeyError({ reason: "encrypt", message: `RSA-OAEP encryption failed: ${e instanceof Error ? e.message : String(e)}` })
  })

export const decryptWithNk = (nk: Nk, ciphertext: Uint8Array): Either.Either<Uint8Array, KeyError> =>
  Either.try({
    try: () =>
      new Uint8Array(privateDecrypt({ key: nk.privateKey, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: "sha1" }, ciphertext)),
    catch: (e) => new KeyError({ reason: "decrypt", message: e instanceof Error ? e.message : String(e) })
  })
