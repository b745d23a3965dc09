/**
 * TPM2_Certify verification: the push model's proof of possession (the AK certifies itself over
 * the verifier's nonce) and the registrar's IAK path (the IAK certifies the AK over
 * SHA-256(agent UUID)). Checks as Keylime's verify_tpm_object (tpm-facts.md §1.9): magic, type
 * 0x8017, extraData == nonce, certified name == Name(object), signature by the signer, and the
 * expected hash and scheme (anti-downgrade).
 */
import { Either } from "effect"
import type { PublicKey } from "../crypto/port.js"
import { resolveAk } from "./akCache.js"
import { equalBytes, sameBytes } from "./bytes.js"
import { TPM_ST_ATTEST_CERTIFY } from "./constants.js"
import { QuoteVerifyError } from "./errors.js"
import type { HashAlg } from "./hashAlg.js"
import type { CertifyAttest, ClockInfo } from "./attest.js"
import { nameOf, type TpmtPublic } from "./public.js"
import { verifySignature, type TpmtSignature } from "./signature.js"
import type { SignScheme } from "./Tpm.js"
import { checkKeyScheme, readSignedAttest } from "./verifyQuote.js"

export interface VerifyCertifyInput {
  /** The certified object (the AK): parsed or TPM2B_PUBLIC bytes. */
  readonly objectPublic: TpmtPublic | Uint8Array
  /** The signing key when it is not the object itself (e.g. an IAK). */
  readonly signerPublic?: TpmtPublic | Uint8Array
  readonly signerKey?: PublicKey
  readonly attest: Uint8Array
  readonly signature: Uint8Array | TpmtSignature
  readonly nonce: Uint8Array
  readonly hashAlg?: HashAlg
  readonly scheme?: SignScheme
}

export interface VerifiedCertify {
  readonly attest: CertifyAttest
  readonly clockInfo: ClockInfo
  readonly firmwareVersion: bigint
  readonly signature: TpmtSignature
}

const fail = (check: QuoteVerifyError["check"], message: string) => Either.left(new QuoteVerifyError({ check, message }))

export const verifyCertify = (input: VerifyCertifyInput): Either.Either<VerifiedCertify, QuoteVerifyError> => {
  // The object need not be restricted for its Name to be certified; the signer must be.
  const object = resolveAk(input.objectPublic, false)
  if (Either.isLeft(object)) return Either.left(object.left)
  let key = input.signerKey
  let signerPublic: TpmtPublic | undefined
  if (key === undefined) {
    const signer = input.signerPublic === undefined ? resolveAk(input.objectPublic) : resolveAk(input.signerPublic)
    if (Either.isLeft(signer)) return Either.left(signer.left)
    key = signer.right.key
    signerPublic = signer.right.public
  }
  const read = readSignedAttest(key, input.signature, input.attest, {
    type: TPM_ST_ATTEST_CERTIFY,
    typeName: "TPM_ST_ATTEST_CERTIFY",
    hashAlg: input.hashAlg,
    scheme: input.scheme
  })
  if (Either.isLeft(read)) return Either.left(read.left)
  const { sig } = read.right
  const schemeErr = signerPublic === undefined ? undefined : checkKeyScheme(signerPublic, sig)
  if (schemeErr !== undefined) return Either.left(schemeErr)
  const attest = read.right.attest as CertifyAttest
  if (!equalBytes(attest.extraData, input.nonce)) return fail("nonce", "extraData does not equal the nonce")
  if (!sameBytes(attest.attested.name, nameOf(object.right.public))) {
    return fail("name", "the certified name is not the Name of the expected object")
  }
  if (!verifySignature(key, sig, input.attest)) return fail("signature", "the signature over the certify attestation does not verify")
  return Either.right({ attest, clockInfo: attest.clockInfo, firmwareVersion: attest.firmwareVersion, signature: sig })
}
