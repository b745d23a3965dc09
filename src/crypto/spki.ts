/**
 * SubjectPublicKeyInfo and PKCS#1 RSAPublicKey, both ways, in plain code: the portable
 * implementation reads keys with it (node reads them with node:crypto), and both write a key's
 * canonical SPKI DER with it (IMA's learned keys, DSSE key ids), byte for byte what node exports.
 */
import { Either } from "effect"
import { children, oidToString, readTlv, type Tlv } from "./der.js"
import { concat } from "./encoding.js"
import type { Curve, EcPublicKey, PublicKey, RsaPublicKey } from "./port.js"

export const OID = {
  rsaEncryption: "1.2.840.113549.1.1.1",
  rsassaPss: "1.2.840.113549.1.1.10",
  ecPublicKey: "1.2.840.10045.2.1",
  ed25519: "1.3.101.112",
  ed448: "1.3.101.113",
  x25519: "1.3.101.110",
  x448: "1.3.101.111",
  dsa: "1.2.840.10040.4.1",
  dh: "1.2.840.113549.1.3.1"
} as const

/**
 * Named curves node (OpenSSL) reads that the engines do not verify with: a key on one of them is
 * a key of another kind, as node reports it; a curve OID outside this list and CURVE_OIDS is not a
 * key at all (node refuses it). OpenSSL knows a few more (binary curves); none is used for attestation.
 */
const OTHER_CURVES: Readonly<Record<string, string>> = {
  "1.2.840.10045.3.1.1": "prime192v1",
  "1.3.132.0.33": "secp224r1",
  "1.3.36.3.3.2.8.1.1.7": "brainpoolP256r1",
  "1.3.36.3.3.2.8.1.1.11": "brainpoolP384r1",
  "1.3.36.3.3.2.8.1.1.13": "brainpoolP512r1",
  "1.2.156.10197.1.301": "SM2"
}

export const CURVE_OIDS: Readonly<Record<Curve, string>> = {
  "P-256": "1.2.840.10045.3.1.7",
  "P-384": "1.3.132.0.34",
  "P-521": "1.3.132.0.35",
  secp256k1: "1.3.132.0.10"
}

const curveOfOid = (oid: string): Curve | undefined => (Object.keys(CURVE_OIDS) as Array<Curve>).find((c) => CURVE_OIDS[c] === oid)

/** What a SubjectPublicKeyInfo holds, before any curve arithmetic: the portable port checks EC points. */
export type SpkiContents =
  | { readonly type: "rsa"; readonly n: Uint8Array; readonly e: Uint8Array }
  | { readonly type: "ec"; readonly curve: Curve; readonly point: Uint8Array }
  | { readonly type: "other"; readonly kind: string }

const intValue = (b: Uint8Array, t: Tlv): Uint8Array | undefined => {
  if (t.tag !== 0x02 || t.end === t.body) return undefined
  if (b[t.body]! & 0x80) return undefined // negative
  return b.subarray(t.body, t.end)
}

/** PKCS#1 RSAPublicKey `SEQUENCE { n INTEGER, e INTEGER }`, the whole input. */
export const readRsaPublicKey = (der: Uint8Array): { readonly n: Uint8Array; readonly e: Uint8Array } | undefined => {
  const seq = Either.getOrUndefined(readTlv(der, 0))
  if (seq === undefined || seq.tag !== 0x30 || seq.end !== der.length) return undefined
  const parts = Either.getOrUndefined(children(der, seq))
  if (parts === undefined || parts.length !== 2) return undefined
  const n = intValue(der, parts[0]!)
  const e = intValue(der, parts[1]!)
  return n === undefined || e === undefined ? undefined : { n, e }
}

/** A DER SubjectPublicKeyInfo, the whole input. */
export const readSpki = (der: Uint8Array): SpkiContents | undefined => {
  const seq = Either.getOrUndefined(readTlv(der, 0))
  if (seq === undefined || seq.tag !== 0x30 || seq.end !== der.length) return undefined
  const parts = Either.getOrUndefined(children(der, seq))
  if (parts === undefined || parts.length !== 2 || parts[0]!.tag !== 0x30 || parts[1]!.tag !== 0x03) return undefined
  const alg = Either.getOrUndefined(children(der, parts[0]!))
  if (alg === undefined || alg.length === 0 || alg[0]!.tag !== 0x06) return undefined
  const oid = oidToString(der.subarray(alg[0]!.body, alg[0]!.end))
  const bits = parts[1]!
  if (bits.end === bits.body || der[bits.body] !== 0) return undefined
  const key = der.subarray(bits.body + 1, bits.end)
  if (oid === OID.rsaEncryption) {
    const rsa = readRsaPublicKey(key)
    return rsa === undefined ? undefined : { type: "rsa", ...rsa }
  }
  if (oid === OID.ecPublicKey) {
    const param = alg[1]
    if (param === undefined || param.tag !== 0x06) return { type: "other", kind: "ec (explicit curve parameters)" }
    const curveOid = oidToString(der.subarray(param.body, param.end))
    const curve = curveOfOid(curveOid)
    if (curve !== undefined) return { type: "ec", curve, point: key }
    const other = OTHER_CURVES[curveOid]
    return other === undefined ? undefined : { type: "other", kind: `ec ${other}` }
  }
  const other = OTHER_KINDS[oid]
  return other === undefined ? undefined : { type: "other", kind: other }
}

const OTHER_KINDS: Readonly<Record<string, string>> = {
  [OID.rsassaPss]: "rsa-pss",
  [OID.ed25519]: "ed25519",
  [OID.ed448]: "ed448",
  [OID.x25519]: "x25519",
  [OID.x448]: "x448",
  [OID.dsa]: "dsa",
  [OID.dh]: "dh"
}

// ---------------------------------------------------------------------------------------------
// writing

const derLength = (n: number): Uint8Array => {
  if (n < 0x80) return Uint8Array.of(n)
  const out: Array<number> = []
  for (let v = n; v > 0; v = Math.floor(v / 256)) out.unshift(v & 0xff)
  return Uint8Array.of(0x80 | out.length, ...out)
}

export const tlv = (tag: number, ...body: ReadonlyArray<Uint8Array>): Uint8Array => {
  const b = concat(...body)
  return concat(Uint8Array.of(tag), derLength(b.length), b)
}

/** A positive DER INTEGER from unsigned big-endian bytes (minimal, 0x00 before a high bit). */
export const derUnsigned = (v: Uint8Array): Uint8Array => {
  let i = 0
  while (i < v.length - 1 && v[i] === 0) i++
  const s = v.subarray(i)
  return tlv(0x02, s.length > 0 && s[0]! & 0x80 ? concat(Uint8Array.of(0), s) : s.length === 0 ? Uint8Array.of(0) : s)
}

export const derOid = (dotted: string): Uint8Array => {
  const parts = dotted.split(".").map(Number)
  const out: Array<number> = [parts[0]! * 40 + parts[1]!]
  for (const p of parts.slice(2)) {
    const groups: Array<number> = []
    let v = p
    do {
      groups.unshift(v & 0x7f)
      v = Math.floor(v / 128)
    } while (v > 0)
    for (let i = 0; i < groups.length - 1; i++) groups[i]! |= 0x80
    out.push(...groups)
  }
  return tlv(0x06, Uint8Array.from(out))
}

const NULL = Uint8Array.of(0x05, 0x00)

/** PKCS#1 RSAPublicKey DER. */
export const rsaPublicKeyDer = (k: RsaPublicKey): Uint8Array => tlv(0x30, derUnsigned(k.n), derUnsigned(k.e))

/** The uncompressed point 04 ‖ x ‖ y. */
export const ecPoint = (k: EcPublicKey): Uint8Array => concat(Uint8Array.of(4), k.x, k.y)

/** The subjectPublicKey contents: RSAPublicKey DER or the EC point (what IMA key ids hash). */
export const subjectPublicKey = (k: RsaPublicKey | EcPublicKey): Uint8Array => (k.type === "rsa" ? rsaPublicKeyDer(k) : ecPoint(k))

/** Canonical SubjectPublicKeyInfo DER of an RSA or EC key. */
export const spkiDer = (k: RsaPublicKey | EcPublicKey): Uint8Array => {
  const alg = k.type === "rsa" ? tlv(0x30, derOid(OID.rsaEncryption), NULL) : tlv(0x30, derOid(OID.ecPublicKey), derOid(CURVE_OIDS[k.curve]))
  return tlv(0x30, alg, tlv(0x03, Uint8Array.of(0), subjectPublicKey(k)))
}

export const isVerifyingKey = (k: PublicKey): k is RsaPublicKey | EcPublicKey => k.type !== "other"
