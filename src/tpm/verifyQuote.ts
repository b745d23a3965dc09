/**
 * Quote verification (the verifier's hot path): the AK signature over TPMS_ATTEST, magic and
 * type, extraData == nonce, the attested PCR selection == the blob's selection, and pcrDigest ==
 * H_sig(PCR values in selection order). The pcrDigest uses the signature's hash even when the
 * banks differ (tpm-facts.md §1.7, quote4). Plain code, one parse, cached AK key.
 */
import { Either } from "effect"
import { cryptoPort } from "../crypto/active.js"
import type { PublicKey } from "../crypto/port.js"
import { resolveAk } from "./akCache.js"
import { sameBytes } from "./bytes.js"
import { TPM_ALG, TPM_GENERATED_VALUE, TPM_ST_ATTEST_QUOTE } from "./constants.js"
import { QuoteVerifyError, type QuoteCheck } from "./errors.js"
import { algIdOf, digestSize, type HashAlg } from "./hashAlg.js"
import { parseAttest, type ClockInfo, type QuoteAttest, type TpmsAttest } from "./attest.js"
import { type PcrBlob, readPcrBlob } from "./pcrBlob.js"
import { sameSelection } from "./pcrSelection.js"
import type { TpmtPublic } from "./public.js"
import { decodeQuoteString } from "./quoteString.js"
import { parseSignature, verifySignature, type TpmtSignature } from "./signature.js"
import type { PcrValues, SignScheme } from "./Tpm.js"

export interface VerifyQuoteInput {
  /** The AK: parsed, or TPM2B_PUBLIC bytes (Keylime's `aik_tpm`). */
  readonly akPublic: TpmtPublic | Uint8Array
  /** The AK's key when the caller already has it (skips the cache). */
  readonly akKey?: PublicKey
  /** TPMS_ATTEST bytes exactly as signed. */
  readonly attest: Uint8Array
  /** TPMT_SIGNATURE bytes or parsed. */
  readonly signature: Uint8Array | TpmtSignature
  /** The PCR values read with the quote (the parsed PCR blob). */
  readonly pcrs: PcrBlob
  readonly nonce: Uint8Array
  /** Expected signature hash (anti-downgrade), e.g. the agent's negotiated hash_alg. */
  readonly hashAlg?: HashAlg
  /** Expected signature scheme, e.g. the agent's negotiated sign_alg. */
  readonly scheme?: SignScheme
}

export interface VerifiedQuote {
  readonly pcrs: PcrValues
  readonly clockInfo: ClockInfo
  readonly firmwareVersion: bigint
  readonly attest: QuoteAttest
  readonly signature: TpmtSignature
}

/** The latin1 digest d equals the bytes b. */
const sameDigest = (d: string, b: Uint8Array): boolean => {
  if (d.length !== b.length) return false
  for (let i = 0; i < b.length; i++) if (d.charCodeAt(i) !== b[i]) return false
  return true
}

/** The PCR values in selection order, as pcrDigest hashes them (gathered unless the blob parse did). */
const orderedValues = (pcrs: PcrBlob): Uint8Array | QuoteVerifyError => {
  const values = pcrs.values
  let total = 0
  for (const bank of pcrs.selection) total += bank.pcrs.length * digestSize(bank.hash)
  const buf = new Uint8Array(total)
  let at = 0
  for (const bank of pcrs.selection) {
    const bv = values.find((v) => v.hash === bank.hash)
    if (bv === undefined) return selectionError(`no values for bank ${bank.hash}`)
    for (const p of bank.pcrs) {
      const d = bv.values.get(p)
      if (d === undefined) return selectionError(`no value for PCR ${p} in bank ${bank.hash}`)
      if (d.length !== digestSize(bank.hash)) return selectionError(`PCR ${p} of bank ${bank.hash} is ${d.length} bytes`)
      buf.set(d, at)
      at += d.length
    }
  }
  return buf
}

const selectionError = (message: string) => new QuoteVerifyError({ check: "pcr_selection", message })

const fail = (check: QuoteCheck, message: string): Either.Either<never, QuoteVerifyError> =>
  Either.left(new QuoteVerifyError({ check, message }))

/** Checks the signature's algorithm against the key type and the expected hash and scheme. */
export const checkSignatureAlgorithm = (
  keyType: PublicKey["type"],
  sig: TpmtSignature,
  hashAlg: HashAlg | undefined,
  scheme: SignScheme | undefined
): QuoteVerifyError | undefined => {
  const keyOk = sig.alg === "ecdsa" ? keyType === "ec" : keyType === "rsa"
  if (!keyOk) return new QuoteVerifyError({ check: "scheme", message: `a ${sig.alg} signature cannot come from a ${keyType} AK` })
  if (scheme !== undefined && sig.alg !== scheme) {
    return new QuoteVerifyError({ check: "scheme", message: `expected a ${scheme} signature, got ${sig.alg}` })
  }
  if (hashAlg !== undefined && sig.hash !== hashAlg) {
    return new QuoteVerifyError({ check: "hash_alg", message: `quote was expected to use ${hashAlg} but used ${sig.hash}` })
  }
  return undefined
}

/**
 * A restricted signing key with a scheme in its public area signs only with that scheme and hash
 * (TPM2_Quote takes TPM_ALG_NULL or the key's own scheme): a signature with another one was not made
 * by the key that area describes.
 */
export const checkKeyScheme = (pub: TpmtPublic, sig: TpmtSignature): QuoteVerifyError | undefined => {
  const scheme = pub.type === "rsa" || pub.type === "ecc" ? pub.scheme : null
  if (scheme === null) return undefined
  if (scheme.scheme === TPM_ALG[sig.alg] && scheme.hashAlg === algIdOf(sig.hash)) return undefined
  const id = (n: number) => `0x${n.toString(16).padStart(4, "0")}`
  return new QuoteVerifyError({
    check: "scheme",
    message: `the AK's scheme is ${id(scheme.scheme)} with hash ${id(scheme.hashAlg)}, the signature is ${sig.alg} with ${sig.hash}`
  })
}

/** Reads magic and type without a full parse so those failures are reported as such. */
export const checkMagicAndType = (attest: Uint8Array, expectedType: number, typeName: string): QuoteVerifyError | undefined => {
  if (attest.length < 6) return new QuoteVerifyError({ check: "parse", message: `TPMS_ATTEST of ${attest.length} bytes is too short` })
  const magic = ((attest[0]! << 24) | (attest[1]! << 16) | (attest[2]! << 8) | attest[3]!) >>> 0
  if (magic !== TPM_GENERATED_VALUE) {
    return new QuoteVerifyError({ check: "magic", message: `magic 0x${magic.toString(16)} is not TPM_GENERATED_VALUE: not made by a TPM` })
  }
  const st = (attest[4]! << 8) | attest[5]!
  if (st !== expectedType) {
    return new QuoteVerifyError({ check: "type", message: `attestation type 0x${st.toString(16)} is not ${typeName} (0x${expectedType.toString(16)})` })
  }
  return undefined
}

/**
 * The checks every signed TPMS_ATTEST shares (quote and certify): the signature's algorithm
 * against the key and the expected hash and scheme, magic and type, and the parse.
 */
export const readSignedAttest = (
  key: PublicKey,
  signature: Uint8Array | TpmtSignature,
  attestBytes: Uint8Array,
  expected: { readonly type: number; readonly typeName: string; readonly hashAlg: HashAlg | undefined; readonly scheme: SignScheme | undefined }
): Either.Either<{ readonly sig: TpmtSignature; readonly attest: TpmsAttest }, QuoteVerifyError> => {
  let sig: TpmtSignature
  if (signature instanceof Uint8Array) {
    const s = parseSignature(signature)
    if (Either.isLeft(s)) return fail("parse", `${s.left.structure} at ${s.left.offset}: ${s.left.message}`)
    sig = s.right
  } else {
    sig = signature
  }
  const algErr = checkSignatureAlgorithm(key.type, sig, expected.hashAlg, expected.scheme)
  if (algErr !== undefined) return Either.left(algErr)
  const mtErr = checkMagicAndType(attestBytes, expected.type, expected.typeName)
  if (mtErr !== undefined) return Either.left(mtErr)
  const parsed = parseAttest(attestBytes)
  if (Either.isLeft(parsed)) return fail("parse", `${parsed.left.structure} at ${parsed.left.offset}: ${parsed.left.message}`)
  return Either.right({ sig, attest: parsed.right })
}

export const verifyQuote = (input: VerifyQuoteInput): Either.Either<VerifiedQuote, QuoteVerifyError> =>
  verifyWithOrdered(input, undefined)

/** `ordered`: the PCR values in selection order when the blob parse already has them. */
const verifyWithOrdered = (input: VerifyQuoteInput, known: Uint8Array | undefined): Either.Either<VerifiedQuote, QuoteVerifyError> => {
  let key = input.akKey
  let akPublic: TpmtPublic | undefined
  if (key === undefined) {
    const ak = resolveAk(input.akPublic)
    if (Either.isLeft(ak)) return Either.left(ak.left)
    key = ak.right.key
    akPublic = ak.right.public
  }
  const read = readSignedAttest(key, input.signature, input.attest, {
    type: TPM_ST_ATTEST_QUOTE,
    typeName: "TPM_ST_ATTEST_QUOTE",
    hashAlg: input.hashAlg,
    scheme: input.scheme
  })
  if (Either.isLeft(read)) return Either.left(read.left)
  const { sig } = read.right
  const schemeErr = akPublic === undefined ? undefined : checkKeyScheme(akPublic, sig)
  if (schemeErr !== undefined) return Either.left(schemeErr)
  const attest = read.right.attest as QuoteAttest

  // The nonce is public (the agent echoes it): a plain compare, no constant-time native call.
  if (!sameBytes(attest.extraData, input.nonce)) return fail("nonce", "extraData does not equal the nonce (stale or replayed quote)")

  if (!sameSelection(attest.attested.pcrSelect, input.pcrs.selection)) {
    return fail("pcr_selection", "the PCR selection in the quote differs from the selection of the PCR values sent with it")
  }
  const ordered = known ?? orderedValues(input.pcrs)
  if (ordered instanceof QuoteVerifyError) return Either.left(ordered)
  // The digest as a latin1 string (one char per byte): compared without allocating a buffer.
  if (!sameDigest(cryptoPort().digestLatin1(sig.hash, ordered), attest.attested.pcrDigest)) {
    return fail("pcr_digest", `the ${sig.hash} digest of the PCR values does not match the quote's pcrDigest`)
  }

  if (!verifySignature(key, sig, input.attest)) return fail("signature", "the AK signature over the quote does not verify")

  return Either.right({ pcrs: input.pcrs.values, clockInfo: attest.clockInfo, firmwareVersion: attest.firmwareVersion, attest, signature: sig })
}

export interface VerifyQuoteStringOptions {
  readonly hashAlg?: HashAlg
  readonly scheme?: SignScheme
  readonly akKey?: PublicKey
}

/** Verifies a Keylime quote string ("r<attest>:<sig>:<pcrs>"). */
export const verifyQuoteString = (
  akPublic: TpmtPublic | Uint8Array,
  quote: string,
  nonce: Uint8Array,
  options: VerifyQuoteStringOptions = {}
): Either.Either<VerifiedQuote, QuoteVerifyError> => {
  const parts = decodeQuoteString(quote)
  if (Either.isLeft(parts)) return fail("parse", `quote string at ${parts.left.offset}: ${parts.left.message}`)
  const pcrs = readPcrBlob(parts.right.pcrBlob)
  if (Either.isLeft(pcrs)) return fail("parse", `${pcrs.left.structure} at ${pcrs.left.offset}: ${pcrs.left.message}`)
  const input = { akPublic, attest: parts.right.attest, signature: parts.right.signature, pcrs: pcrs.right.blob, nonce, ...options }
  return verifyWithOrdered(input, pcrs.right.ordered)
}
