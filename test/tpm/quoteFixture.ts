/** Builds genuinely signed quotes with node:crypto keys and the codecs (tests and bench). */
import { constants, createHash, generateKeyPairSync, randomBytes, sign, type KeyObject } from "node:crypto"
import { Either } from "effect"
import { marshalAttest, type QuoteAttest } from "../../src/tpm/attest.js"
import { TPM_GENERATED_VALUE } from "../../src/tpm/constants.js"
import { digestSize, type HashAlg } from "../../src/tpm/hashAlg.js"
import { marshalPcrBlob, type PcrBlob } from "../../src/tpm/pcrBlob.js"
import { nameOf, type TpmtPublic } from "../../src/tpm/public.js"
import { encodeQuoteString } from "../../src/tpm/quoteString.js"
import { marshalSignature, type TpmtSignature } from "../../src/tpm/signature.js"
import { akPublicFromKey } from "../../src/tpm/templates.js"
import type { PcrSelection, SignScheme } from "../../src/tpm/Tpm.js"

export interface TestAk {
  readonly public: TpmtPublic
  readonly privateKey: KeyObject
  readonly publicKey: KeyObject
  readonly scheme: SignScheme
  readonly hash: HashAlg
}

export const makeAk = (alg: "rsa" | "ecc", scheme?: SignScheme, hash: HashAlg = "sha256", bits?: number): TestAk => {
  const kp =
    alg === "rsa"
      ? generateKeyPairSync("rsa", { modulusLength: bits ?? 2048 })
      : generateKeyPairSync("ec", { namedCurve: bits === 384 ? "P-384" : "P-256" })
  const s = scheme ?? (alg === "rsa" ? "rsassa" : "ecdsa")
  return { public: Either.getOrThrow(akPublicFromKey(kp.publicKey, s, hash)), privateKey: kp.privateKey, publicKey: kp.publicKey, scheme: s, hash }
}

export const signAttest = (ak: TestAk, attest: Uint8Array): TpmtSignature => {
  if (ak.scheme === "ecdsa") {
    const size = ak.public.type === "ecc" && ak.public.curveId === 4 ? 48 : 32
    const sig = sign(ak.hash, attest, { key: ak.privateKey, dsaEncoding: "ieee-p1363" })
    return { alg: "ecdsa", hash: ak.hash, r: new Uint8Array(sig.subarray(0, size)), s: new Uint8Array(sig.subarray(size)) }
  }
  const padding = ak.scheme === "rsapss" ? constants.RSA_PKCS1_PSS_PADDING : constants.RSA_PKCS1_PADDING
  const sig = sign(ak.hash, attest, { key: ak.privateKey, padding, saltLength: digestSize(ak.hash) })
  return { alg: ak.scheme, hash: ak.hash, sig: new Uint8Array(sig) }
}

export interface SignedQuote {
  readonly attest: Uint8Array
  readonly attestParsed: QuoteAttest
  readonly signature: Uint8Array
  readonly pcrs: PcrBlob
  readonly pcrBlob: Uint8Array
  readonly quote: string
  readonly nonce: Uint8Array
}

/** A quote over random PCR values for `selection`, signed by `ak` as a TPM would. */
export const makeQuote = (ak: TestAk, selection: PcrSelection, nonce: Uint8Array = new Uint8Array(randomBytes(20))): SignedQuote => {
  const values = selection.map((b) => ({
    hash: b.hash,
    values: new Map(b.pcrs.map((p) => [p, new Uint8Array(randomBytes(digestSize(b.hash)))] as const))
  }))
  const h = createHash(ak.hash)
  for (const b of values) for (const v of b.values.values()) h.update(v)
  const sel = selection.map((b) => ({ hash: b.hash, pcrs: b.pcrs, sizeofSelect: 3 }))
  const attestParsed: QuoteAttest = {
    magic: TPM_GENERATED_VALUE,
    type: "quote",
    qualifiedSigner: nameOf(ak.public),
    extraData: nonce,
    clockInfo: { clock: 123456n, resetCount: 5, restartCount: 0, safe: true },
    firmwareVersion: 0x2019102300163636n,
    attested: { pcrSelect: sel, pcrDigest: new Uint8Array(h.digest()) }
  }
  const attest = marshalAttest(attestParsed)
  const signature = marshalSignature(signAttest(ak, attest))
  const pcrs: PcrBlob = { selection: sel, values }
  const pcrBlob = marshalPcrBlob(pcrs)
  return { attest, attestParsed, signature, pcrs, pcrBlob, quote: encodeQuoteString({ attest, signature, pcrBlob }), nonce }
}
