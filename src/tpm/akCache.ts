/**
 * AK public area → node KeyObject, cached: building a KeyObject from a JWK costs more than the
 * rest of a quote check, and a verifier sees the same few AKs over and over.
 */
import type { KeyObject } from "node:crypto"
import { Either } from "effect"
import { toBase64 } from "./bytes.js"
import { QuoteVerifyError } from "./errors.js"
import { isRestrictedSigningKey, parseTpm2bPublic, publicKeyOf, type TpmtPublic } from "./public.js"

export interface ResolvedAk {
  readonly public: TpmtPublic
  readonly key: KeyObject
}

const byObject = new WeakMap<object, ResolvedAk>()
const byBytes = new Map<string, ResolvedAk>()
const MAX_BY_BYTES = 1024

const keyError = (message: string) => Either.left(new QuoteVerifyError({ check: "key", message }))

const resolveParsed = (pub: TpmtPublic, requireRestricted: boolean): Either.Either<ResolvedAk, QuoteVerifyError> => {
  if (requireRestricted && !isRestrictedSigningKey(pub)) {
    return keyError("the AK is not a restricted signing key, so it could sign forged attestation data")
  }
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
  const hit = byObject.get(ak)
  if (hit !== undefined) return requireRestricted && !isRestrictedSigningKey(hit.public) ? resolveParsed(hit.public, true) : Either.right(hit)
  let resolved: Either.Either<ResolvedAk, QuoteVerifyError>
  if (ak instanceof Uint8Array) {
    const k = toBase64(ak)
    const cached = byBytes.get(k)
    if (cached !== undefined) {
      resolved = requireRestricted ? resolveParsed(cached.public, true) : Either.right(cached)
      if (Either.isRight(resolved)) byObject.set(ak, resolved.right)
      return resolved
    }
    const pub = parseTpm2bPublic(ak)
    if (Either.isLeft(pub)) return keyError(`AK TPM2B_PUBLIC: ${pub.left.message} (${pub.left.structure} at ${pub.left.offset})`)
    resolved = resolveParsed(pub.right, false)
    if (Either.isRight(resolved)) {
      if (byBytes.size >= MAX_BY_BYTES) byBytes.clear()
      byBytes.set(k, resolved.right)
    }
  } else {
    resolved = resolveParsed(ak, false)
  }
  if (Either.isRight(resolved)) {
    byObject.set(ak, resolved.right)
    if (requireRestricted && !isRestrictedSigningKey(resolved.right.public)) return resolveParsed(resolved.right.public, true)
  }
  return resolved
}
