/** Key pairs for certificates, as node `KeyObject`s. */
import * as crypto from "node:crypto"
import { Either } from "effect"
import { PkiError } from "../crypto/pkiError.js"

export type KeyKind = "rsa2048" | "rsa3072" | "ec-p256" | "ec-p384"

export interface KeyPair {
  readonly publicKey: crypto.KeyObject
  readonly privateKey: crypto.KeyObject
}

export const generateKeyPair = (kind: KeyKind): KeyPair => {
  switch (kind) {
    case "rsa2048":
    case "rsa3072":
      return crypto.generateKeyPairSync("rsa", { modulusLength: kind === "rsa2048" ? 2048 : 3072 })
    case "ec-p256":
      return crypto.generateKeyPairSync("ec", { namedCurve: "prime256v1" })
    case "ec-p384":
      return crypto.generateKeyPairSync("ec", { namedCurve: "secp384r1" })
  }
}

/** PKCS#8 PEM of a private key (what `client-private.pem` and friends hold). */
export const privateKeyToPem = (key: crypto.KeyObject): string =>
  key.export({ type: "pkcs8", format: "pem" }).toString()

/** SubjectPublicKeyInfo DER of a public (or private) key. */
export const spkiDer = (key: crypto.KeyObject): Uint8Array =>
  new Uint8Array((key.type === "public" ? key : crypto.createPublicKey(key)).export({ type: "spki", format: "der" }))

/** Parses a PEM private key (PKCS#8, PKCS#1 or SEC1). */
export const privateKeyFromPem = (pem: string): Either.Either<crypto.KeyObject, PkiError> =>
  Either.try({
    try: () => crypto.createPrivateKey(pem),
    catch: (cause) => new PkiError({ reason: "not a readable private key", cause })
  })
