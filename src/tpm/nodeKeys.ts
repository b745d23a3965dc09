/**
 * node KeyObjects for TPM public areas and back: what the Node-only parts need (MakeCredential,
 * EK certificates, the simulator, templates from a key). Verification uses the crypto port's keys
 * (`publicKeyOf`, src/tpm/public.ts) instead.
 */
import { createPublicKey, type KeyObject } from "node:crypto"
import { Either } from "effect"
import { toBase64Url } from "../crypto/encoding.js"
import { TPM_ECC } from "./constants.js"
import { TpmParseError } from "./errors.js"
import { publicKeyOf, type TpmtPublicFields } from "./public.js"

const keyFail = (message: string) => Either.left(new TpmParseError({ structure: "TPMT_PUBLIC", offset: 0, message }))

/** The node KeyObject of an RSA or ECC public area. */
export const keyObjectOf = (pub: TpmtPublicFields): Either.Either<KeyObject, TpmParseError> =>
  Either.flatMap(publicKeyOf(pub), (k) => {
    try {
      if (k.type === "rsa") return Either.right(createPublicKey({ key: { kty: "RSA", n: toBase64Url(k.n), e: toBase64Url(k.e) }, format: "jwk" }))
      if (k.type === "ec") return Either.right(createPublicKey({ key: { kty: "EC", crv: k.curve, x: toBase64Url(k.x), y: toBase64Url(k.y) }, format: "jwk" }))
      return keyFail(`a ${k.kind} key`)
    } catch (e) {
      return keyFail(`not a valid public key: ${e instanceof Error ? e.message : String(e)}`)
    }
  })

const fromB64url = (s: string): Uint8Array => new Uint8Array(Buffer.from(s, "base64url"))

/** The unique field of a public area from a node public key (for building templates). */
export const uniqueOfKey = (
  key: KeyObject
): Either.Either<{ readonly type: "rsa"; readonly modulus: Uint8Array; readonly exponent: number; readonly keyBits: number } | { readonly type: "ecc"; readonly curveId: number; readonly x: Uint8Array; readonly y: Uint8Array }, TpmParseError> => {
  try {
    const jwk = key.export({ format: "jwk" })
    if (jwk.kty === "RSA" && jwk.n !== undefined && jwk.e !== undefined) {
      const modulus = fromB64url(jwk.n)
      const e = fromB64url(jwk.e).reduce((a, b) => a * 256 + b, 0)
      return Either.right({ type: "rsa", modulus, exponent: e === 65537 ? 0 : e, keyBits: modulus.length * 8 })
    }
    if (jwk.kty === "EC" && jwk.x !== undefined && jwk.y !== undefined) {
      const curveId = jwk.crv === "P-256" ? TPM_ECC.nistP256 : jwk.crv === "P-384" ? TPM_ECC.nistP384 : undefined
      if (curveId === undefined) return keyFail(`unsupported curve ${jwk.crv}`)
      return Either.right({ type: "ecc", curveId, x: fromB64url(jwk.x), y: fromB64url(jwk.y) })
    }
    return keyFail(`unsupported key type ${jwk.kty}`)
  } catch (e) {
    return keyFail(`cannot export key: ${e instanceof Error ? e.message : String(e)}`)
  }
}
