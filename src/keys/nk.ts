/**
 * The agent's NK: an RSA-2048 key pair whose public half (PEM) the tenant and verifier use to
 * encrypt U and V with RSA-OAEP, MGF1-SHA-1, SHA-1, no label (Keylime `crypto.rsa_encrypt`).
 * The agent keeps the private half in its data directory (0600) so a restarted agent presents the
 * NK a verifier already holds (see src/agent/nkStore.ts).
 */
import {
  constants,
  createPrivateKey,
  createPublicKey,
  generateKeyPair,
  generateKeyPairSync,
  privateDecrypt,
  publicEncrypt,
  type KeyObject
} from "node:crypto"
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

/** The private key as PKCS#8 PEM, for the agent's data directory. */
export const nkPrivatePem = (nk: Nk): string => nk.privateKey.export({ type: "pkcs8", format: "pem" }).toString()

/** An NK from its stored PEM: an RSA private key of at least 2048 bits, or a KeyError saying why not. */
export const nkFromPrivatePem = (pem: string): Either.Either<Nk, KeyError> =>
  Either.flatMap(
    Either.try({
      try: () => createPrivateKey(pem),
      catch: (e) => new KeyError({ reason: "key", message: `not a private key: ${e instanceof Error ? e.message : String(e)}` })
    }),
    (privateKey) =>
      privateKey.asymmetricKeyType !== "rsa" || (privateKey.asymmetricKeyDetails?.modulusLength ?? 0) < 2048
        ? Either.left(new KeyError({ reason: "key", message: "the NK must be an RSA key of at least 2048 bits" }))
        : Either.right({
          privateKey,
          publicPem: createPublicKey(privateKey).export({ type: "spki", format: "pem" }).toString()
        })
  )
