/**
 * AK public area → the crypto port's key, cached: importing a key (node builds a KeyObject from a
 * JWK) costs more than the rest of a quote check, and a verifier sees the same few AKs over and over.
 */
import { Either } from "effect"
import type { PublicKey } from "../crypto/port.js"
import { toBase64 } from "./bytes.js"
import { QuoteVerifyError } from "./errors.js"
import { isRestrictedSigningKey, parseTpm2bPublic, publicKeyOf, type TpmtPublic } from "./public.js"

export interface ResolvedAk {
  readonly public: TpmtPublic
  readonly key: PublicKey
}

const byObject = new WeakMap<object, ResolvedAk>()
const byBytes = new Map<string, ResolvedAk>()
const MAX_BY_BYTES = 1024

const keyError = (message: string) => Either.left(new QuoteVerifyError({ check: "key", message }))

const restrictedError = () => keyError("the AK is not a restricted signing key, so it could sign forged attestation data")

const resolveParsed = (pub: TpmtPublic): Either.Either<ResolvedAk, QuoteVerifyError> => {
  const key = publicKeyOf(pub)
  if (Either.isLeft(key)) return keyError(`AK public area: ${key.left.message}`)
  return Either.right({ public: pub, key: key.right })
}

/**
 * Resolves an AK given as a parsed TpmtPublic or as TPM2B_PUBLIC bytes (Keylime's `aik_tpm`).
 * An AK must be a restricted signing key: only those refuse to sign data that starts with
 * TPM_GENERATED_VALUE, which is what makes a TPMS_ATTEST trustworthy.
 */
export const resolveAk = (ak: TpmtPublic | Uint8Array, requireRestricted = true): Either.Either<ResolvedAk, QuoteVerifyError> => {
  let found = byObject.get(ak)
  if (found === undefined && ak instanceof Uint8Array) {
    found = byBytes.get(toBase64(ak))
    // Same bytes in a new array: remember the array too, so the next call skips the base64 key.
    if (found !== undefined) byObject.set(ak, found)
  }
  if (found !== undefined) {
    // A hit returns the cached key itself: its native form is cached beside it by the port.
    return requireRestricted && !isRestrictedSigningKey(found.public) ? restrictedError() : Either.right(found)
  }
  let pub: TpmtPublic
  if (ak instanceof Uint8Array) {
    const parsed = parseTpm2bPublic(ak)
    if (Either.isLeft(parsed)) {
      return keyError(`AK TPM2B_PUBLIC: ${parsed.left.message} (${parsed.left.structure} at ${parsed.left.offset})`)
    }
    pub = parsed.right
  } else {
    pub = ak
  }
  const resolved = resolveParsed(pub)
  if (Either.isLeft(resolved)) return resolved
  byObject.set(ak, resolved.right)
  if (ak instanceof Uint8Array) {
    if (byBytes.size >= MAX_BY_BYTES) byBytes.clear()
    byBytes.set(toBase64(ak), resolved.right)
  }
  return requireRestricted && !isRestrictedSigningKey(pub) ? restrictedError() : resolved
}
