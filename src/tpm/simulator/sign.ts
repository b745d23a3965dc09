/** The AK's signature over TPMS_ATTEST bytes as a TPMT_SIGNATURE (what TPM2_Quote/Certify return). */
import { constants, type KeyObject, sign } from "node:crypto"
import { Either } from "effect"
import { digestSize } from "../hashAlg.js"
import { marshalSignature } from "../signature.js"
import type { HashAlg, SignScheme } from "../Tpm.js"

export const signAttest = (
  key: KeyObject,
  scheme: SignScheme,
  hash: HashAlg,
  attest: Uint8Array
): Either.Either<Uint8Array, string> => {
  try {
    if (scheme === "ecdsa") {
      // IEEE P1363 gives r ‖ s, each the curve size: exactly the two TPM2B fields.
      const rs = sign(hash, attest, { key, dsaEncoding: "ieee-p1363" })
      const half = rs.length / 2
      return Either.right(
        marshalSignature({ alg: "ecdsa", hash, r: new Uint8Array(rs.subarray(0, half)), s: new Uint8Array(rs.subarray(half)) })
      )
    }
    // TPM RSAPSS uses a salt as long as the digest (TPM 2.0 Part 1, B.7).
    const sig = scheme === "rsapss"
      ? sign(hash, attest, { key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: digestSize(hash) })
      : sign(hash, attest, key)
    return Either.right(marshalSignature({ alg: scheme, hash, sig: new Uint8Array(sig) }))
  } catch (e) {
    return Either.left(e instanceof Error ? e.message : String(e))
  }
}
