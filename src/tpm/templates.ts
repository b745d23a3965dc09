/** Standard public-area templates (EK per TCG EK Credential Profile low range; AK as tpm2_createak). */
import type { KeyObject } from "node:crypto"
import { Either } from "effect"
import { fromHex } from "./bytes.js"
import { TPM_ALG, TPMA_OBJECT } from "./constants.js"
import type { TpmParseError } from "./errors.js"
import { algIdOf, type HashAlg } from "./hashAlg.js"
import { uniqueOfKey } from "./nodeKeys.js"
import { makeTpmtPublic, type TpmtPublic } from "./public.js"
import type { SignScheme } from "./Tpm.js"

/** PolicySecret(TPM_RH_ENDORSEMENT) digest of the standard EK templates. */
export const EK_AUTH_POLICY: Uint8Array = fromHex("837197674484b3f81a90cc8d46a5d724fd52d76e06520b64f2a1da1b331469aa")!

/** 0x000300b2: fixedTPM, fixedParent, sensitiveDataOrigin, adminWithPolicy, restricted, decrypt. */
export const EK_ATTRIBUTES =
  TPMA_OBJECT.fixedTPM | TPMA_OBJECT.fixedParent | TPMA_OBJECT.sensitiveDataOrigin |
  TPMA_OBJECT.adminWithPolicy | TPMA_OBJECT.restricted | TPMA_OBJECT.decrypt

/** 0x00050072: fixedTPM, fixedParent, sensitiveDataOrigin, userWithAuth, restricted, sign. */
export const AK_ATTRIBUTES =
  TPMA_OBJECT.fixedTPM | TPMA_OBJECT.fixedParent | TPMA_OBJECT.sensitiveDataOrigin |
  TPMA_OBJECT.userWithAuth | TPMA_OBJECT.restricted | TPMA_OBJECT.sign

const aes128cfb = { alg: TPM_ALG.aes, keyBits: 128, mode: TPM_ALG.cfb }

/** EK public area for a node key (RSA 2048 or ECC P-256/P-384), standard template, nameAlg sha256. */
export const ekPublicFromKey = (key: KeyObject): Either.Either<TpmtPublic, TpmParseError> =>
  Either.map(uniqueOfKey(key), (u): TpmtPublic =>
    u.type === "rsa"
      ? makeTpmtPublic({
          type: "rsa", nameAlg: "sha256", attributes: EK_ATTRIBUTES, authPolicy: EK_AUTH_POLICY,
          symmetric: aes128cfb, scheme: null, keyBits: u.keyBits, exponent: u.exponent, modulus: u.modulus
        })
      : makeTpmtPublic({
          type: "ecc", nameAlg: "sha256", attributes: EK_ATTRIBUTES, authPolicy: EK_AUTH_POLICY,
          symmetric: aes128cfb, scheme: null, curveId: u.curveId, kdf: null, x: u.x, y: u.y
        })
  )

/** AK public area (restricted signing key) for a node key, scheme and hash, nameAlg sha256. */
export const akPublicFromKey = (key: KeyObject, scheme: SignScheme, hash: HashAlg, nameAlg: HashAlg = "sha256"): Either.Either<TpmtPublic, TpmParseError> =>
  Either.map(uniqueOfKey(key), (u): TpmtPublic => {
    const s = { scheme: TPM_ALG[scheme], hashAlg: algIdOf(hash) }
    return u.type === "rsa"
      ? makeTpmtPublic({
          type: "rsa", nameAlg, attributes: AK_ATTRIBUTES, authPolicy: new Uint8Array(0),
          symmetric: null, scheme: s, keyBits: u.keyBits, exponent: u.exponent, modulus: u.modulus
        })
      : makeTpmtPublic({
          type: "ecc", nameAlg, attributes: AK_ATTRIBUTES, authPolicy: new Uint8Array(0),
          symmetric: null, scheme: s, curveId: u.curveId, kdf: null, x: u.x, y: u.y
        })
  })
