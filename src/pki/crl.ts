/**
 * X.509 v2 certificate revocation lists (RFC 5280 §5) of the server components CA, so an
 * administrator's certificate can be taken back (spec §5.3). pkijs builds the TBSCertList and
 * node:crypto signs its DER, as for certificates. Parsing and verification are pure and return
 * `PkiError`s naming what is wrong; nothing throws.
 */
import * as asn1js from "asn1js"
import * as crypto from "node:crypto"
import * as pkijs from "pkijs"
import { Either } from "effect"
import { signatureOid, time } from "./certificate.js"
import { certificateFields, children, readTlv, subjectKeyIdentifier } from "../crypto/der.js"
import { PkiError } from "../crypto/pkiError.js"
import { spkiDer } from "./keys.js"
import { fromPem, isPemText } from "../crypto/pem.js"

export const CRL_EXT = {
  crlNumber: "2.5.29.20",
  authorityKeyIdentifier: "2.5.29.35",
  reasonCode: "2.5.29.21"
} as const

export interface RevokedEntry {
  /** Serial as normalised hex (upper case, no leading zeros), see `normalizeSerial`. */
  readonly serial: string
  readonly revokedAt: Date
}

export interface CrlOptions {
  readonly issuer: { readonly certificate: Uint8Array; readonly privateKey: crypto.KeyObject }
  readonly thisUpdate: Date
  readonly nextUpdate: Date
  readonly revoked: ReadonlyArray<RevokedEntry>
  /** Monotonic CRL number (RFC 5280 §5.2.3); bumped on every reissue. */
  readonly crlNumber: bigint
}

export interface Crl {
  readonly der: Uint8Array
  /** DER of the issuer Name, compared byte for byte with the CA's subject. */
  readonly issuer: Uint8Array
  readonly thisUpdate: Date
  readonly nextUpdate: Date | undefined
  readonly crlNumber: bigint | undefined
  readonly revoked: ReadonlyArray<RevokedEntry>
  readonly tbs: Uint8Array
  readonly signatureAlgorithm: string
  readonly signature: Uint8Array
}

/** Hex serial as node prints it (`X509Certificate.serialNumber`) or as typed: upper case, no leading zeros. */
export const normalizeSerial = (hex: string): string => {
  const s = hex.replace(/[:\s]/g, "").toUpperCase().replace(/^0+/, "")
  return s === "" ? "0" : s
}

const fail = (reason: string, cause?: unknown) => Either.left(new PkiError({ reason: `CRL: ${reason}`, cause }))

const hexBytes = (hex: string): Either.Either<Uint8Array, PkiError> => {
  let h = normalizeSerial(hex)
  if (!/^[0-9A-F]+$/.test(h) || h === "0") return fail(`serial '${hex}' is not a positive hexadecimal number`)
  if (h.length % 2) h = "0" + h
  if (parseInt(h.slice(0, 2), 16) & 0x80) h = "00" + h
  if (h.length > 42) return fail(`serial '${hex}' is longer than 20 octets`)
  return Either.right(new Uint8Array(Buffer.from(h, "hex")))
}

const bigintBytes = (n: bigint): Uint8Array => {
  let h = n.toString(16)
  if (h.length % 2) h = "0" + h
  if (parseInt(h.slice(0, 2), 16) & 0x80) h = "00" + h
  return new Uint8Array(Buffer.from(h, "hex"))
}

const ext = (extnID: string, critical: boolean, value: ArrayBuffer) => new pkijs.Extension({ extnID, critical, extnValue: value })

/** Issues a CRL signed by `issuer` and returns its DER. */
export const issueCrl = (o: CrlOptions): Either.Either<Uint8Array, PkiError> =>
  Either.gen(function*() {
    if (!(o.thisUpdate.getTime() < o.nextUpdate.getTime())) return yield* fail("thisUpdate must be before nextUpdate")
    if (o.crlNumber < 0n) return yield* fail("CRL number must not be negative")
    const sig = yield* signatureOid(o.issuer.privateKey, undefined)
    const fields = yield* certificateFields(o.issuer.certificate)
    const signerSpki = yield* Either.try({
      try: () => spkiDer(o.issuer.privateKey),
      catch: (cause) => new PkiError({ reason: "CRL: signing key cannot be exported", cause })
    })
    if (!Buffer.from(fields.spki).equals(signerSpki)) return yield* fail("CA private key does not match the CA certificate")
    const ski = yield* subjectKeyIdentifier(o.issuer.certificate)
    const entries: Array<pkijs.RevokedCertificate> = []
    for (const r of o.revoked) {
      entries.push(new pkijs.RevokedCertificate({
        userCertificate: new asn1js.Integer({ valueHex: yield* hexBytes(r.serial) }),
        revocationDate: time(r.revokedAt)
      }))
    }
    return yield* Either.try({
      try: () => {
        const crl = new pkijs.CertificateRevocationList()
        crl.version = 1 // v2
        const algId = () => new pkijs.AlgorithmIdentifier({ algorithmId: sig.oid, ...(sig.ec ? {} : { algorithmParams: new asn1js.Null() }) })
        crl.signature = algId()
        crl.issuer = pkijs.RelativeDistinguishedNames.fromBER(fields.subject.slice())
        crl.thisUpdate = time(o.thisUpdate)
        crl.nextUpdate = time(o.nextUpdate)
        // RFC 5280 §5.1.2.6: absent, not an empty SEQUENCE, when nothing is revoked.
        if (entries.length > 0) crl.revokedCertificates = entries
        const exts = [ext(CRL_EXT.crlNumber, false, new asn1js.Integer({ valueHex: bigintBytes(o.crlNumber) }).toBER(false))]
        if (ski !== undefined) {
          const aki = new pkijs.AuthorityKeyIdentifier({ keyIdentifier: new asn1js.OctetString({ valueHex: ski }) })
          exts.push(ext(CRL_EXT.authorityKeyIdentifier, false, aki.toSchema().toBER(false)))
        }
        crl.crlExtensions = new pkijs.Extensions({ extensions: exts })
        // encodeTBS is protected in pkijs: encode the whole list once (placeholder signature), keep its TBS.
        crl.signatureAlgorithm = algId()
        crl.signatureValue = new asn1js.BitString({ valueHex: new Uint8Array(0) })
        const tbs = new Uint8Array(crl.toSchema(true).valueBlock.value[0]!.toBER(false))
        const signature = crypto.sign(sig.hash, tbs, sig.ec ? { key: o.issuer.privateKey, dsaEncoding: "der" } : o.issuer.privateKey)
        crl.tbsView = tbs
        crl.signatureValue = new asn1js.BitString({ valueHex: new Uint8Array(signature) })
        return new Uint8Array(crl.toSchema(false).toBER(false))
      },
      catch: (cause) => new PkiError({ reason: "CRL: cannot encode or sign", cause })
    })
  })

const toHex = (b: Uint8Array) => Buffer.from(b).toString("hex")

const integerValue = (i: asn1js.Integer): Either.Either<Uint8Array, PkiError> => {
  const v = i.valueBlock.valueHexView
  if (!(i instanceof asn1js.Integer) || v.length === 0) return fail("malformed INTEGER")
  if (v[0]! & 0x80) return fail("negative serial or CRL number")
  return Either.right(v)
}

/** The extensions attest understands; an unknown critical one makes the CRL unusable (RFC 5280 §5.2). */
const KNOWN = new Set<string>(Object.values(CRL_EXT))

const parseDer = (der: Uint8Array): Either.Either<Crl, PkiError> =>
  Either.gen(function*() {
    const outer = yield* Either.mapLeft(readTlv(der, 0), (e) => new PkiError({ reason: `CRL: ${e.reason}` }))
    if (outer.tag !== 0x30) return yield* fail("not a SEQUENCE")
    if (outer.end !== der.length) return yield* fail(`${der.length - outer.end} trailing bytes after the CRL`)
    const parts = yield* Either.mapLeft(children(der, outer), (e) => new PkiError({ reason: `CRL: ${e.reason}` }))
    if (parts.length !== 3 || parts[0]!.tag !== 0x30) return yield* fail("expected tbsCertList, signatureAlgorithm, signature")
    const tbsTlv = parts[0]!
    const tbsParts = yield* Either.mapLeft(children(der, tbsTlv), (e) => new PkiError({ reason: `CRL: ${e.reason}` }))
    const versionPresent = tbsParts[0]?.tag === 0x02
    const issuerTlv = tbsParts[versionPresent ? 2 : 1]
    if (issuerTlv === undefined || issuerTlv.tag !== 0x30) return yield* fail("no issuer name")
    const crl = yield* Either.try({
      try: () => pkijs.CertificateRevocationList.fromBER(der.slice()),
      catch: (cause) => new PkiError({ reason: `CRL: not a certificate revocation list (${cause instanceof Error ? cause.message : String(cause)})` })
    })
    if (crl.version !== 1 && !(crl.version === 0 && !versionPresent)) return yield* fail(`unsupported version ${crl.version}`)
    // The algorithm outside the signed part must be the one inside it (RFC 5280 §5.1.1.2).
    const inner = toHex(new Uint8Array(crl.signature.toSchema().toBER(false)))
    const outerAlg = toHex(new Uint8Array(crl.signatureAlgorithm.toSchema().toBER(false)))
    if (inner !== outerAlg) return yield* fail("signatureAlgorithm differs from the signature field of tbsCertList")
    if (crl.signatureValue.valueBlock.unusedBits !== 0) return yield* fail("signature BIT STRING has unused bits")
    const revoked: Array<RevokedEntry> = []
    for (const r of crl.revokedCertificates ?? []) {
      const serial = yield* integerValue(r.userCertificate)
      for (const e of r.crlEntryExtensions?.extensions ?? []) {
        if (e.critical && e.extnID !== CRL_EXT.reasonCode) return yield* fail(`unknown critical entry extension ${e.extnID}`)
      }
      revoked.push({ serial: normalizeSerial(toHex(serial)), revokedAt: r.revocationDate.value })
    }
    let crlNumber: bigint | undefined
    for (const e of crl.crlExtensions?.extensions ?? []) {
      if (e.critical && !KNOWN.has(e.extnID)) return yield* fail(`unknown critical extension ${e.extnID}`)
      if (e.extnID === CRL_EXT.crlNumber) {
        const parsed = asn1js.fromBER(e.extnValue.valueBlock.valueHexView)
        if (parsed.offset === -1 || !(parsed.result instanceof asn1js.Integer)) return yield* fail("malformed CRL number")
        crlNumber = BigInt("0x" + (toHex(yield* integerValue(parsed.result)) || "0"))
      }
    }
    const thisUpdate = crl.thisUpdate.value
    if (!(thisUpdate instanceof Date) || Number.isNaN(thisUpdate.getTime())) return yield* fail("bad thisUpdate")
    return {
      der,
      issuer: der.slice(issuerTlv.start, issuerTlv.end),
      thisUpdate,
      nextUpdate: crl.nextUpdate?.value,
      crlNumber,
      revoked,
      tbs: der.slice(tbsTlv.start, tbsTlv.end),
      signatureAlgorithm: crl.signatureAlgorithm.algorithmId,
      signature: new Uint8Array(crl.signatureValue.valueBlock.valueHexView)
    } satisfies Crl
  })

/** A CRL from DER or PEM (`X509 CRL` block); the signature is not checked here, see `verifyCrl`. */
export const parseCrl = (bytes: Uint8Array): Either.Either<Crl, PkiError> => {
  if (!isPemText(bytes)) return parseDer(bytes)
  const block = fromPem(Buffer.from(bytes).toString("latin1")).find((b) => b.label === "X509 CRL")
  return block === undefined ? fail("PEM text holds no X509 CRL block") : parseDer(block.der)
}

const VERIFY: Record<string, { hash: string; ec: boolean }> = {
  "1.2.840.113549.1.1.11": { hash: "sha256", ec: false },
  "1.2.840.113549.1.1.12": { hash: "sha384", ec: false },
  "1.2.840.113549.1.1.13": { hash: "sha512", ec: false },
  "1.2.840.10045.4.3.2": { hash: "sha256", ec: true },
  "1.2.840.10045.4.3.3": { hash: "sha384", ec: true },
  "1.2.840.10045.4.3.4": { hash: "sha512", ec: true }
}

/** Checks that `caCertificate` (DER) issued and signed the CRL. */
export const verifyCrl = (crl: Crl, caCertificate: Uint8Array): Either.Either<Crl, PkiError> =>
  Either.gen(function*() {
    const ca = yield* certificateFields(caCertificate)
    if (!Buffer.from(ca.subject).equals(crl.issuer)) return yield* fail("issuer is not the CA certificate's subject")
    const alg = VERIFY[crl.signatureAlgorithm]
    if (alg === undefined) return yield* fail(`unsupported signature algorithm ${crl.signatureAlgorithm}`)
    const ok = yield* Either.try({
      try: () => {
        const key = crypto.createPublicKey({ key: Buffer.from(ca.spki), format: "der", type: "spki" })
        return crypto.verify(alg.hash, crl.tbs, alg.ec ? { key, dsaEncoding: "der" } : key, crl.signature)
      },
      catch: (cause) => new PkiError({ reason: "CRL: signature cannot be checked with the CA key", cause })
    })
    return ok ? crl : yield* fail("signature does not verify with the CA certificate")
  })

/** Parse + verify: the only way a CRL should reach `isAdminCertificate`. */
export const loadVerifiedCrl = (bytes: Uint8Array, caCertificate: Uint8Array): Either.Either<Crl, PkiError> =>
  Either.flatMap(parseCrl(bytes), (crl) => verifyCrl(crl, caCertificate))

/**
 * Revocation lists of the trusted CAs, keyed by the issuer Name DER (hex), with the revoked
 * serials as a set: what `isAdminCertificate` consults per request.
 */
export interface RevocationList {
  readonly byIssuer: ReadonlyMap<string, ReadonlySet<string>>
  /** Where the CRLs came from, for logs. */
  readonly source: string
}

export const revocationListOf = (crls: ReadonlyArray<Crl>, source = "(memory)"): RevocationList => {
  const byIssuer = new Map<string, Set<string>>()
  for (const c of crls) {
    const key = toHex(c.issuer)
    const set = byIssuer.get(key) ?? new Set<string>()
    for (const r of c.revoked) set.add(r.serial)
    byIssuer.set(key, set)
  }
  return { byIssuer, source }
}
