/**
 * EK certificates (TCG EK Credential Profile) parsed with pkijs, which tolerates the TCG quirks
 * node's X509Certificate can reject: a critical SAN holding only a directoryName, an empty
 * subject, and NV-read DER padded with trailing bytes. Chain validation is src/pki's job; this
 * gives it the DER, the key and the names, and checks the key against the EK public area.
 */
import { createPublicKey, type KeyObject } from "node:crypto"
import * as asn1js from "asn1js"
import * as pkijs from "pkijs"
import { Either } from "effect"
import { derLength } from "../pki/parse.js"
import { toHex } from "./bytes.js"
import { EkCertificateError } from "./errors.js"
import { keyObjectOf } from "./nodeKeys.js"
import { parseTpm2bPublic, type TpmtPublic } from "./public.js"

export interface EkCertificate {
  /** The certificate DER without any trailing NV padding. */
  readonly der: Uint8Array
  readonly publicKey: KeyObject
  readonly subject: string
  readonly issuer: string
  readonly serialNumber: string
  readonly notBefore: Date
  readonly notAfter: Date
  /** TCG attributes from the SAN directoryName (manufacturer 2.23.133.2.1, model .2, version .3). */
  readonly tpmManufacturer?: string
  readonly tpmModel?: string
  readonly tpmVersion?: string
}

const fail = (reason: EkCertificateError["reason"], message: string) => Either.left(new EkCertificateError({ reason, message }))

const shortNames: Record<string, string> = {
  "2.5.4.3": "CN",
  "2.5.4.6": "C",
  "2.5.4.7": "L",
  "2.5.4.8": "ST",
  "2.5.4.10": "O",
  "2.5.4.11": "OU",
  "2.5.4.5": "serialNumber",
  "2.23.133.2.1": "TPMManufacturer",
  "2.23.133.2.2": "TPMModel",
  "2.23.133.2.3": "TPMVersion"
}

const valueText = (v: pkijs.AttributeTypeAndValue): string => {
  const b = v.value as unknown as { valueBlock?: { value?: unknown } }
  const raw = b.valueBlock?.value
  return typeof raw === "string" ? raw : toHex(new Uint8Array(v.value.toBER(false)))
}

const rdnText = (name: pkijs.RelativeDistinguishedNames): string =>
  name.typesAndValues.map((tv) => `${shortNames[tv.type] ?? tv.type}=${valueText(tv)}`).join(", ")

const tcgAttributes = (cert: pkijs.Certificate): Record<string, string> => {
  const out: Record<string, string> = {}
  const san = cert.extensions?.find((e) => e.extnID === "2.5.29.17")
  if (san === undefined) return out
  try {
    const parsed = san.parsedValue as pkijs.AltName | undefined
    for (const g of parsed?.altNames ?? []) {
      if (g.type !== 4 || !(g.value instanceof pkijs.RelativeDistinguishedNames)) continue
      for (const tv of g.value.typesAndValues) {
        const n = shortNames[tv.type]
        if (n !== undefined && n.startsWith("TPM")) out[n] = valueText(tv)
      }
    }
  } catch {
    // a SAN we cannot read leaves the TCG attributes out; the key is what matters
  }
  return out
}

export const parseEkCertificate = (bytes: Uint8Array): Either.Either<EkCertificate, EkCertificateError> => {
  const len = derLength(bytes)
  if (len === undefined) return fail("parse", "not a DER certificate (no complete outer SEQUENCE)")
  const der = bytes.slice(0, len)
  try {
    const asn = asn1js.fromBER(der)
    if (asn.offset === -1) return fail("parse", `bad DER: ${asn.result.error}`)
    const cert = new pkijs.Certificate({ schema: asn.result })
    const spki = new Uint8Array(cert.subjectPublicKeyInfo.toSchema().toBER(false))
    let publicKey: KeyObject
    try {
      publicKey = createPublicKey({ key: Buffer.from(spki), format: "der", type: "spki" })
    } catch (e) {
      return fail("key", `unsupported certificate key: ${e instanceof Error ? e.message : String(e)}`)
    }
    const tcg = tcgAttributes(cert)
    return Either.right({
      der,
      publicKey,
      subject: rdnText(cert.subject),
      issuer: rdnText(cert.issuer),
      serialNumber: toHex(new Uint8Array(cert.serialNumber.valueBlock.valueHexView)),
      notBefore: cert.notBefore.value,
      notAfter: cert.notAfter.value,
      ...(tcg["TPMManufacturer"] !== undefined ? { tpmManufacturer: tcg["TPMManufacturer"] } : {}),
      ...(tcg["TPMModel"] !== undefined ? { tpmModel: tcg["TPMModel"] } : {}),
      ...(tcg["TPMVersion"] !== undefined ? { tpmVersion: tcg["TPMVersion"] } : {})
    })
  } catch (e) {
    return fail("parse", `not a valid X.509 certificate: ${e instanceof Error ? e.message : String(e)}`)
  }
}

/** Same public key, compared as JWK members (n/e or crv/x/y), independent of SPKI encoding. */
export const sameKey = (a: KeyObject, b: KeyObject): boolean => {
  try {
    const ja = a.export({ format: "jwk" })
    const jb = b.export({ format: "jwk" })
    return ja.kty === jb.kty && ja.n === jb.n && ja.e === jb.e && ja.crv === jb.crv && ja.x === jb.x && ja.y === jb.y
  } catch {
    return false
  }
}

/** Right(cert) when the certificate's key is the key of the EK public area (parsed or TPM2B bytes). */
export const ekCertificateMatchesPublic = (
  certDer: Uint8Array,
  ekPublic: TpmtPublic | Uint8Array
): Either.Either<EkCertificate, EkCertificateError> => {
  const cert = parseEkCertificate(certDer)
  if (Either.isLeft(cert)) return cert
  const pub = ekPublic instanceof Uint8Array ? parseTpm2bPublic(ekPublic) : Either.right(ekPublic)
  if (Either.isLeft(pub)) return fail("parse", `EK public: ${pub.left.message}`)
  const key = keyObjectOf(pub.right)
  if (Either.isLeft(key)) return fail("key", `EK public: ${key.left.message}`)
  return sameKey(cert.right.publicKey, key.right) ? cert : fail("mismatch", "the EK certificate is for a different key than the EK")
}
