/**
 * X.509 v3 certificate issuance. pkijs builds the TBSCertificate; node:crypto signs its DER, so
 * any node `KeyObject` (RSA, EC P-256/P-384) works and issuance stays synchronous.
 */
import * as asn1js from "asn1js"
import * as crypto from "node:crypto"
import * as pkijs from "pkijs"
import { Either } from "effect"
import { certificateFields, subjectKeyIdentifier, subjectPublicKeyBits } from "../crypto/der.js"
import { PkiError } from "../crypto/pkiError.js"
import { spkiDer } from "./keys.js"
import { buildName, type DistinguishedName, ipToBytes, type NameAttribute } from "./names.js"

export { PkiError } from "../crypto/pkiError.js"
export { generateKeyPair, type KeyKind, type KeyPair, privateKeyFromPem, privateKeyToPem } from "./keys.js"
export { type DistinguishedName, type NameAttribute, tcgDirectoryName } from "./names.js"
export { fromPem, type PemBlock, toPem } from "../crypto/pem.js"

export type KeyUsage =
  | "digitalSignature"
  | "nonRepudiation"
  | "keyEncipherment"
  | "dataEncipherment"
  | "keyAgreement"
  | "keyCertSign"
  | "cRLSign"
  | "encipherOnly"
  | "decipherOnly"

const KEY_USAGE_BITS: ReadonlyArray<KeyUsage> = [
  "digitalSignature",
  "nonRepudiation",
  "keyEncipherment",
  "dataEncipherment",
  "keyAgreement",
  "keyCertSign",
  "cRLSign",
  "encipherOnly",
  "decipherOnly"
]

export const EKU = {
  serverAuth: "1.3.6.1.5.5.7.3.1",
  clientAuth: "1.3.6.1.5.5.7.3.2",
  /** TCG "EK certificate" purpose. */
  tcgEkCertificate: "2.23.133.8.1"
} as const

export const EXT = {
  subjectKeyIdentifier: "2.5.29.14",
  keyUsage: "2.5.29.15",
  subjectAltName: "2.5.29.17",
  basicConstraints: "2.5.29.19",
  authorityKeyIdentifier: "2.5.29.35",
  extKeyUsage: "2.5.29.37"
} as const

export interface SubjectAltName {
  readonly dns?: ReadonlyArray<string>
  readonly ip?: ReadonlyArray<string>
  /** One directoryName (TPM EK certificates: the TCG manufacturer/model/version attributes). */
  readonly directoryName?: ReadonlyArray<NameAttribute>
  /** EK certificates with an empty subject must mark the SAN critical (RFC 5280 §4.2.1.6). */
  readonly critical?: boolean
}

export interface ExtraExtension {
  readonly oid: string
  readonly critical?: boolean
  /** DER of the extension's value (the contents of extnValue). */
  readonly value: Uint8Array
}

export interface CertificateOptions {
  readonly subject: DistinguishedName
  readonly publicKey: crypto.KeyObject
  /** The issuing CA; omitted for a self-signed certificate, which then needs `signingKey`. */
  readonly issuer?: { readonly certificate: Uint8Array; readonly privateKey: crypto.KeyObject }
  /** Private key of a self-signed certificate (ignored when `issuer` is given). */
  readonly signingKey?: crypto.KeyObject
  /** Positive serial; 16 random bytes by default. */
  readonly serial?: bigint
  readonly notBefore: Date
  readonly notAfter: Date
  readonly basicConstraints?: { readonly ca: boolean; readonly pathLen?: number; readonly critical?: boolean }
  readonly keyUsage?: ReadonlyArray<KeyUsage>
  readonly extendedKeyUsage?: ReadonlyArray<string>
  readonly subjectAltName?: SubjectAltName
  /** Both default to true. */
  readonly subjectKeyIdentifier?: boolean
  readonly authorityKeyIdentifier?: boolean
  readonly extensions?: ReadonlyArray<ExtraExtension>
  /** Digest of the signature; by default SHA-384 for P-384 signers, SHA-256 otherwise. */
  readonly hash?: "sha256" | "sha384"
}

const SIG_OIDS = {
  rsa: { sha256: "1.2.840.113549.1.1.11", sha384: "1.2.840.113549.1.1.12" },
  ec: { sha256: "1.2.840.10045.4.3.2", sha384: "1.2.840.10045.4.3.3" }
} as const

const fail = (reason: string, cause?: unknown) => Either.left(new PkiError({ reason, cause }))

const ber = (o: { toBER(sizeOnly?: boolean): ArrayBuffer }): ArrayBuffer => o.toBER(false)

const ext = (extnID: string, critical: boolean, value: ArrayBuffer) => new pkijs.Extension({ extnID, critical, extnValue: value })

/** RFC 5280 §4.2.1.2 method 1: SHA-1 of the subjectPublicKey BIT STRING contents. */
export const keyIdentifier = (spki: Uint8Array): Either.Either<Uint8Array, PkiError> =>
  Either.map(subjectPublicKeyBits(spki), (bits) => new Uint8Array(crypto.createHash("sha1").update(bits).digest()))

/** Minimal DER BIT STRING for a key-usage set (trailing zero bits dropped). */
const keyUsageBits = (usages: ReadonlyArray<KeyUsage>): asn1js.BitString => {
  let value = 0
  for (const u of usages) value |= 1 << KEY_USAGE_BITS.indexOf(u)
  const highest = 31 - Math.clz32(value)
  const nBytes = value === 0 ? 1 : Math.floor(highest / 8) + 1
  const bytes = new Uint8Array(nBytes)
  for (let bit = 0; bit <= highest; bit++) if (value & (1 << bit)) bytes[bit >> 3]! |= 0x80 >> (bit & 7)
  const unusedBits = value === 0 ? 0 : 7 - (highest & 7)
  return new asn1js.BitString({ valueHex: bytes, unusedBits })
}

const randomSerial = (): Uint8Array => {
  const b = new Uint8Array(crypto.randomBytes(16))
  b[0] = (b[0]! & 0x7f) | 0x40 // positive and exactly 16 bytes in DER
  return b
}

const serialBytes = (serial: bigint): Either.Either<Uint8Array, PkiError> => {
  if (serial <= 0n) return fail("serial number must be positive")
  let hex = serial.toString(16)
  if (hex.length % 2) hex = "0" + hex
  if (parseInt(hex.slice(0, 2), 16) & 0x80) hex = "00" + hex
  if (hex.length > 42) return fail("serial number longer than 20 octets")
  return Either.right(new Uint8Array(Buffer.from(hex, "hex")))
}

// RFC 5280 §4.1.2.5: UTCTime through 2049, GeneralizedTime from 2050.
export const time = (d: Date) => new pkijs.Time({ type: d.getUTCFullYear() < 2050 ? 0 : 1, value: d })

export const signatureOid = (
  key: crypto.KeyObject,
  hash: "sha256" | "sha384" | undefined
): Either.Either<{ oid: string; hash: "sha256" | "sha384"; ec: boolean }, PkiError> => {
  if (key.asymmetricKeyType === "rsa") return Either.right({ oid: SIG_OIDS.rsa[hash ?? "sha256"], hash: hash ?? "sha256", ec: false })
  if (key.asymmetricKeyType === "ec") {
    const h = hash ?? (key.asymmetricKeyDetails?.namedCurve === "secp384r1" ? "sha384" : "sha256")
    return Either.right({ oid: SIG_OIDS.ec[h], hash: h, ec: true })
  }
  return fail(`unsupported signing key type ${String(key.asymmetricKeyType)}`)
}

const buildSan = (san: SubjectAltName): Either.Either<pkijs.Extension, PkiError> => {
  const names: Array<pkijs.GeneralName> = []
  for (const d of san.dns ?? []) names.push(new pkijs.GeneralName({ type: 2, value: d }))
  for (const ip of san.ip ?? []) {
    const bytes = ipToBytes(ip)
    if (bytes === undefined) return fail(`subjectAltName: ${ip} is not an IP address`)
    names.push(new pkijs.GeneralName({ type: 7, value: new asn1js.OctetString({ valueHex: bytes }) }))
  }
  if (san.directoryName !== undefined) {
    names.push(new pkijs.GeneralName({ type: 4, value: buildName({ extra: san.directoryName }) }))
  }
  if (names.length === 0) return fail("subjectAltName without names")
  return Either.right(ext(EXT.subjectAltName, san.critical ?? false, ber(new pkijs.GeneralNames({ names }).toSchema())))
}

interface IssuerInfo {
  readonly name: pkijs.RelativeDistinguishedNames
  readonly spki: Uint8Array
  readonly ski: Uint8Array | undefined
}

// Only the fields issuance needs, read with the small DER walker (a full pkijs parse costs ~7 ms).
const parseIssuer = (der: Uint8Array): Either.Either<IssuerInfo, PkiError> =>
  Either.gen(function*() {
    const f = yield* Either.mapLeft(certificateFields(der), (e) => new PkiError({ reason: `issuer certificate: ${e.reason}` }))
    const ski = yield* subjectKeyIdentifier(der)
    const name = yield* Either.try({
      try: () => pkijs.RelativeDistinguishedNames.fromBER(f.subject.slice()),
      catch: (cause) => new PkiError({ reason: "issuer certificate: unreadable subject name", cause })
    })
    return { name, spki: f.spki, ski }
  })

/** Issues an X.509 v3 certificate and returns its DER. */
export const issueCertificate = (o: CertificateOptions): Either.Either<Uint8Array, PkiError> =>
  Either.gen(function*() {
    const signer = o.issuer?.privateKey ?? o.signingKey
    if (signer === undefined) return yield* fail("a self-signed certificate needs signingKey")
    if (!(o.notBefore.getTime() < o.notAfter.getTime())) return yield* fail("notBefore must be before notAfter")
    const sig = yield* signatureOid(signer, o.hash)
    const subjectSpki = yield* Either.try({
      try: () => spkiDer(o.publicKey),
      catch: (cause) => new PkiError({ reason: "subject public key cannot be exported", cause })
    })
    const issuerCert = o.issuer === undefined ? undefined : yield* parseIssuer(o.issuer.certificate)
    const signerSpki = yield* Either.try({
      try: () => spkiDer(signer),
      catch: (cause) => new PkiError({ reason: "signing key cannot be exported", cause })
    })
    if (issuerCert !== undefined && !Buffer.from(issuerCert.spki).equals(signerSpki)) {
      return yield* fail("issuer private key does not match the issuer certificate")
    }

    const cert = new pkijs.Certificate()
    cert.version = 2
    cert.serialNumber = new asn1js.Integer({
      valueHex: o.serial === undefined ? randomSerial() : yield* serialBytes(o.serial)
    })
    cert.subject = buildName(o.subject)
    // The issuer's subject is reused as decoded so its bytes match exactly for chain building.
    cert.issuer = issuerCert?.name ?? cert.subject
    cert.notBefore = time(o.notBefore)
    cert.notAfter = time(o.notAfter)
    cert.subjectPublicKeyInfo = pkijs.PublicKeyInfo.fromBER(subjectSpki)
    const algId = () => new pkijs.AlgorithmIdentifier({ algorithmId: sig.oid, ...(sig.ec ? {} : { algorithmParams: new asn1js.Null() }) })
    cert.signature = algId()

    const exts: Array<pkijs.Extension> = []
    if (o.basicConstraints !== undefined) {
      const bc = new pkijs.BasicConstraints({
        cA: o.basicConstraints.ca,
        ...(o.basicConstraints.pathLen === undefined ? {} : { pathLenConstraint: o.basicConstraints.pathLen })
      })
      exts.push(ext(EXT.basicConstraints, o.basicConstraints.critical ?? true, ber(bc.toSchema())))
    }
    if (o.keyUsage !== undefined && o.keyUsage.length > 0) exts.push(ext(EXT.keyUsage, true, ber(keyUsageBits(o.keyUsage))))
    if (o.extendedKeyUsage !== undefined && o.extendedKeyUsage.length > 0) {
      exts.push(ext(EXT.extKeyUsage, false, ber(new pkijs.ExtKeyUsage({ keyPurposes: [...o.extendedKeyUsage] }).toSchema())))
    }
    if (o.subjectAltName !== undefined) exts.push(yield* buildSan(o.subjectAltName))
    if (o.subjectKeyIdentifier ?? true) {
      exts.push(ext(EXT.subjectKeyIdentifier, false, ber(new asn1js.OctetString({ valueHex: yield* keyIdentifier(subjectSpki) }))))
    }
    if (o.authorityKeyIdentifier ?? true) {
      const kid = issuerCert?.ski ?? (yield* keyIdentifier(signerSpki))
      const aki = new pkijs.AuthorityKeyIdentifier({ keyIdentifier: new asn1js.OctetString({ valueHex: kid }) })
      exts.push(ext(EXT.authorityKeyIdentifier, false, ber(aki.toSchema())))
    }
    for (const e of o.extensions ?? []) exts.push(ext(e.oid, e.critical ?? false, e.value.slice().buffer))
    if (exts.length > 0) cert.extensions = exts

    const tbs = yield* Either.try({
      try: () => new Uint8Array(cert.encodeTBS().toBER(false)),
      catch: (cause) => new PkiError({ reason: "cannot encode the certificate", cause })
    })
    const signature = yield* Either.try({
      try: () => crypto.sign(sig.hash, tbs, sig.ec ? { key: signer, dsaEncoding: "der" } : signer),
      catch: (cause) => new PkiError({ reason: "signing failed", cause })
    })
    cert.tbsView = tbs
    cert.signatureAlgorithm = algId()
    cert.signatureValue = new asn1js.BitString({ valueHex: new Uint8Array(signature) })
    return new Uint8Array(cert.toSchema(false).toBER(false))
  })
