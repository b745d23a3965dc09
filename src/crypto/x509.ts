/**
 * An X.509 certificate read in plain code (src/crypto/der.ts's walker): what a chain check needs
 * (the signed bytes, the signature and its algorithm, names, validity, basic constraints, key
 * identifiers and key usage, the key) and what the SEV-SNP module reads (AMD's extensions). The
 * signature is checked through the crypto port, so the same check runs on node and in a browser.
 */
import { Either } from "effect"
import { children, oidToString, readTlv, type Tlv } from "./der.js"
import { latin1, utf8 } from "./encoding.js"
import type { HashAlg, SignatureScheme } from "./port.js"

export interface Certificate {
  readonly der: Uint8Array
  /** The tbsCertificate bytes: what the issuer signed. */
  readonly tbs: Uint8Array
  /** signatureAlgorithm: OID and DER parameters (RSASSA-PSS carries its hash and salt length there). */
  readonly signatureAlgorithm: { readonly oid: string; readonly params: Uint8Array | undefined }
  /** The signature BIT STRING's contents (without the unused-bits byte). */
  readonly signature: Uint8Array
  /** The signatureAlgorithm outside the signed part is byte for byte the one inside it (else no signature verifies, as with OpenSSL). */
  readonly algorithmsAgree: boolean
  /** Name DER of issuer and subject (compared byte for byte) and as text ("C=US, …, CN=…"). */
  readonly issuer: Uint8Array
  readonly subject: Uint8Array
  readonly issuerText: string
  readonly subjectText: string
  readonly notBefore: Date
  readonly notAfter: Date
  /** The whole SubjectPublicKeyInfo TLV. */
  readonly spki: Uint8Array
  /** OID → { critical, value: the extnValue contents }. */
  readonly extensions: ReadonlyMap<string, { readonly critical: boolean; readonly value: Uint8Array }>
  /** basicConstraints cA. */
  readonly ca: boolean
  /** basicConstraints pathLenConstraint. */
  readonly pathLen: number | undefined
}

const bad = (what: string) => Either.left(`malformed certificate: ${what}`)

const ATTRIBUTES: Readonly<Record<string, string>> = {
  "2.5.4.3": "CN",
  "2.5.4.5": "serialNumber",
  "2.5.4.6": "C",
  "2.5.4.7": "L",
  "2.5.4.8": "ST",
  "2.5.4.10": "O",
  "2.5.4.11": "OU",
  "1.2.840.113549.1.9.1": "emailAddress"
}

const stringOf = (b: Uint8Array, t: Tlv): string => {
  const body = b.subarray(t.body, t.end)
  if (t.tag === 0x1e) {
    let s = ""
    for (let i = 0; i + 1 < body.length; i += 2) s += String.fromCharCode((body[i]! << 8) | body[i + 1]!)
    return s
  }
  return t.tag === 0x0c ? utf8(body) : latin1(body)
}

/** "C=US, L=Santa Clara, …, CN=SEV-VCEK": the RDNs in order, as node's X509Certificate lists them. */
const nameText = (b: Uint8Array, name: Tlv): string => {
  const parts: Array<string> = []
  for (const set of Either.getOrElse(children(b, name), () => [])) {
    for (const atv of Either.getOrElse(children(b, set), () => [])) {
      const [oid, value] = Either.getOrElse(children(b, atv), () => [])
      if (oid === undefined || value === undefined || oid.tag !== 0x06) continue
      const o = oidToString(b.subarray(oid.body, oid.end))
      parts.push(`${ATTRIBUTES[o] ?? o}=${stringOf(b, value)}`)
    }
  }
  return parts.join(", ")
}

const digits = (s: string, at: number, n: number): number => Number(s.slice(at, at + n))

/** UTCTime (YYMMDDHHMMSSZ; 50–99 are 19xx) or GeneralizedTime (YYYYMMDDHHMMSSZ). */
const timeOf = (b: Uint8Array, t: Tlv): Date | undefined => {
  const s = latin1(b.subarray(t.body, t.end))
  const m = t.tag === 0x17 ? /^(\d{2})(\d{10})Z$/.exec(s) : t.tag === 0x18 ? /^(\d{4})(\d{10})Z$/.exec(s) : null
  if (m === null) return undefined
  const yy = Number(m[1])
  const year = t.tag === 0x17 ? (yy >= 50 ? 1900 + yy : 2000 + yy) : yy
  const r = m[2]!
  const ms = Date.UTC(year, digits(r, 0, 2) - 1, digits(r, 2, 2), digits(r, 4, 2), digits(r, 6, 2), digits(r, 8, 2))
  return Number.isNaN(ms) ? undefined : new Date(ms)
}

/** A DER certificate (trailing bytes after the outer SEQUENCE are ignored, as for EK certificates from NV). */
export const readCertificate = (input: Uint8Array): Either.Either<Certificate, string> =>
  Either.gen(function*() {
    const outer = yield* Either.mapLeft(readTlv(input, 0), (e) => e.reason)
    if (outer.tag !== 0x30) return yield* bad("not a SEQUENCE")
    const der = input.subarray(0, outer.end)
    const top = yield* Either.mapLeft(children(der, outer), (e) => e.reason)
    const [tbsT, algT, sigT] = top
    if (top.length !== 3 || tbsT!.tag !== 0x30 || algT!.tag !== 0x30 || sigT!.tag !== 0x03) return yield* bad("not tbsCertificate, signatureAlgorithm, signature")
    const algParts = yield* Either.mapLeft(children(der, algT!), (e) => e.reason)
    if (algParts[0]?.tag !== 0x06) return yield* bad("no signature algorithm")
    if (sigT!.end === sigT!.body || der[sigT!.body] !== 0) return yield* bad("the signature is not a whole-byte BIT STRING")
    const fields = yield* Either.mapLeft(children(der, tbsT!), (e) => e.reason)
    const rest = fields[0]?.tag === 0xa0 ? fields.slice(1) : fields
    const [, signedAlg, issuer, validity, subject, spki, ...tail] = rest
    if (signedAlg === undefined || issuer === undefined || validity === undefined || subject === undefined || spki === undefined) return yield* bad("short tbsCertificate")
    const algorithmsAgree = signedAlg.end - signedAlg.start === algT!.end - algT!.start && der.subarray(signedAlg.start, signedAlg.end).every((b, i) => b === der[algT!.start + i])
    const [nb, na] = yield* Either.mapLeft(children(der, validity), (e) => e.reason)
    const notBefore = nb === undefined ? undefined : timeOf(der, nb)
    const notAfter = na === undefined ? undefined : timeOf(der, na)
    if (notBefore === undefined || notAfter === undefined) return yield* bad("unreadable validity")
    const extensions = new Map<string, { critical: boolean; value: Uint8Array }>()
    const wrapper = tail.find((t) => t.tag === 0xa3)
    if (wrapper !== undefined) {
      const [seq] = yield* Either.mapLeft(children(der, wrapper), (e) => e.reason)
      if (seq === undefined) return yield* bad("empty extensions")
      for (const ext of yield* Either.mapLeft(children(der, seq), (e) => e.reason)) {
        const parts = yield* Either.mapLeft(children(der, ext), (e) => e.reason)
        const oid = parts[0]
        const value = parts[parts.length - 1]
        if (oid === undefined || oid.tag !== 0x06 || value === undefined || value.tag !== 0x04) return yield* bad("an extension is not OID, value")
        const critical = parts.length === 3 && parts[1]!.tag === 0x01 && der[parts[1]!.body] !== 0
        extensions.set(oidToString(der.subarray(oid.body, oid.end)), { critical, value: der.subarray(value.body, value.end) })
      }
    }
    const { ca, pathLen } = basicConstraints(extensions.get("2.5.29.19")?.value)
    return {
      der,
      tbs: der.subarray(tbsT!.start, tbsT!.end),
      signatureAlgorithm: {
        oid: oidToString(der.subarray(algParts[0].body, algParts[0].end)),
        params: algParts[1] === undefined || algParts[1].tag === 0x05 ? undefined : der.subarray(algParts[1].start, algParts[1].end)
      },
      signature: der.subarray(sigT!.body + 1, sigT!.end),
      algorithmsAgree,
      issuer: der.subarray(issuer.start, issuer.end),
      subject: der.subarray(subject.start, subject.end),
      issuerText: nameText(der, issuer),
      subjectText: nameText(der, subject),
      notBefore,
      notAfter,
      spki: der.subarray(spki.start, spki.end),
      extensions,
      ca,
      pathLen
    }
  })

const basicConstraints = (value: Uint8Array | undefined): { readonly ca: boolean; readonly pathLen: number | undefined } => {
  if (value === undefined) return { ca: false, pathLen: undefined }
  const seq = Either.getOrUndefined(readTlv(value, 0))
  const parts = seq === undefined ? [] : Either.getOrElse(children(value, seq), () => [])
  let ca = false
  let pathLen: number | undefined
  for (const p of parts) {
    if (p.tag === 0x01) ca = value[p.body] !== 0
    if (p.tag === 0x02) {
      let n = 0
      for (let i = p.body; i < p.end; i++) n = n * 256 + value[i]!
      pathLen = n
    }
  }
  return { ca, pathLen }
}

/** An OCTET STRING key identifier inside an extension value (SKI), or AKI's [0] keyIdentifier. */
const keyIdOf = (value: Uint8Array | undefined, aki: boolean): Uint8Array | undefined => {
  if (value === undefined) return undefined
  const t = Either.getOrUndefined(readTlv(value, 0))
  if (t === undefined) return undefined
  if (!aki) return t.tag === 0x04 ? value.subarray(t.body, t.end) : undefined
  const id = Either.getOrElse(children(value, t), () => []).find((c) => c.tag === 0x80)
  return id === undefined ? undefined : value.subarray(id.body, id.end)
}

const equal = (a: Uint8Array, b: Uint8Array): boolean => a.length === b.length && a.every((v, i) => v === b[i])

/**
 * `issuer` could have issued `cert` (as OpenSSL's X509_check_issued): the issuer name is its subject,
 * the key identifiers agree when both are present, and a key usage, when present, allows keyCertSign.
 */
export const mayHaveIssued = (issuer: Certificate, cert: Certificate): boolean => {
  if (!equal(cert.issuer, issuer.subject)) return false
  const aki = keyIdOf(cert.extensions.get("2.5.29.35")?.value, true)
  const ski = keyIdOf(issuer.extensions.get("2.5.29.14")?.value, false)
  if (aki !== undefined && ski !== undefined && !equal(aki, ski)) return false
  const ku = issuer.extensions.get("2.5.29.15")?.value
  if (ku !== undefined) {
    const t = Either.getOrUndefined(readTlv(ku, 0))
    // BIT STRING: unused-bits byte, then bits from the most significant; keyCertSign is bit 5.
    if (t === undefined || t.tag !== 0x03 || t.end - t.body < 2 || (ku[t.body + 1]! & 0x04) === 0) return false
  }
  return true
}

const SIGNATURE_ALGS: Readonly<Record<string, SignatureScheme>> = {
  "1.2.840.113549.1.1.5": { alg: "rsa-pkcs1", hash: "sha1" },
  "1.2.840.113549.1.1.11": { alg: "rsa-pkcs1", hash: "sha256" },
  "1.2.840.113549.1.1.12": { alg: "rsa-pkcs1", hash: "sha384" },
  "1.2.840.113549.1.1.13": { alg: "rsa-pkcs1", hash: "sha512" },
  "1.2.840.10045.4.1": { alg: "ecdsa", hash: "sha1", encoding: "der" },
  "1.2.840.10045.4.3.2": { alg: "ecdsa", hash: "sha256", encoding: "der" },
  "1.2.840.10045.4.3.3": { alg: "ecdsa", hash: "sha384", encoding: "der" },
  "1.2.840.10045.4.3.4": { alg: "ecdsa", hash: "sha512", encoding: "der" }
}

const HASH_OIDS: Readonly<Record<string, HashAlg>> = {
  "1.3.14.3.2.26": "sha1",
  "2.16.840.1.101.3.4.2.1": "sha256",
  "2.16.840.1.101.3.4.2.2": "sha384",
  "2.16.840.1.101.3.4.2.3": "sha512"
}

/**
 * RSASSA-PSS-params (RFC 4055): [0] hashAlgorithm, [1] maskGenAlgorithm (MGF1 with the same hash
 * only), [2] saltLength, [3] trailerField (1). Defaults: SHA-1, salt 20.
 */
const pssScheme = (params: Uint8Array | undefined): SignatureScheme | string => {
  let hash: HashAlg = "sha1"
  let salt = 20
  let mgfHash: HashAlg = "sha1"
  if (params !== undefined) {
    const seq = Either.getOrUndefined(readTlv(params, 0))
    if (seq === undefined || seq.tag !== 0x30) return "RSASSA-PSS parameters are not a SEQUENCE"
    for (const field of Either.getOrElse(children(params, seq), () => [])) {
      const inner = Either.getOrUndefined(readTlv(params, field.body, field.end))
      if (inner === undefined) return "unreadable RSASSA-PSS parameters"
      const oidAt = (t: Tlv) => {
        const first = Either.getOrElse(children(params, t), () => [])[0]
        return first?.tag === 0x06 ? oidToString(params.subarray(first.body, first.end)) : undefined
      }
      if (inner.tag !== (field.tag === 0xa0 || field.tag === 0xa1 ? 0x30 : 0x02)) return "malformed RSASSA-PSS parameters"
      if (field.tag === 0xa0) {
        const h = HASH_OIDS[oidAt(inner) ?? ""]
        if (h === undefined) return "RSASSA-PSS with an unsupported hash"
        hash = h
      } else if (field.tag === 0xa1) {
        const parts = Either.getOrElse(children(params, inner), () => [])
        const mgfOid = parts[0]?.tag === 0x06 ? oidToString(params.subarray(parts[0].body, parts[0].end)) : undefined
        const h = parts[1] === undefined ? undefined : HASH_OIDS[oidAt(parts[1]) ?? ""]
        if (mgfOid !== "1.2.840.113549.1.1.8" || h === undefined) return "RSASSA-PSS with a mask generation other than MGF1"
        mgfHash = h
      } else if (field.tag === 0xa2) {
        if (inner.tag !== 0x02) return "RSASSA-PSS salt length is not an INTEGER"
        salt = 0
        for (let i = inner.body; i < inner.end; i++) salt = salt * 256 + params[i]!
      } else if (field.tag === 0xa3) {
        if (inner.tag !== 0x02 || inner.end - inner.body !== 1 || params[inner.body] !== 1) return "RSASSA-PSS with a trailer field other than 1"
      }
    }
  }
  if (mgfHash !== hash) return "RSASSA-PSS whose MGF1 hash differs from its hash"
  return { alg: "rsa-pss", hash, saltLength: salt }
}

/** The scheme the certificate's signature was made with, or why attest cannot check it. */
export const signatureSchemeOf = (cert: Certificate): SignatureScheme | string => {
  if (!cert.algorithmsAgree) return "the signature algorithm differs from the one in tbsCertificate"
  if (cert.signatureAlgorithm.oid === "1.2.840.113549.1.1.10") return pssScheme(cert.signatureAlgorithm.params)
  return SIGNATURE_ALGS[cert.signatureAlgorithm.oid] ?? `signature algorithm ${cert.signatureAlgorithm.oid} is not supported`
}
