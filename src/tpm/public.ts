/**
 * TPMT_PUBLIC / TPM2B_PUBLIC (TPM 2.0 Part 2 §12.2): parse, marshal, public key, Name.
 *
 * Algorithm fields are kept as raw TPM_ALG ids so any parsed public re-encodes byte for byte;
 * `bytes` holds the exact TPMT_PUBLIC bytes so the Name hashes what was parsed.
 */
import { Either } from "effect"
import { cryptoPort } from "../crypto/active.js"
import type { Curve, PublicKey } from "../crypto/port.js"
import { parseWhole, type Reader, Writer, concatBytes } from "./bytes.js"
import { TPM_ALG, TPM_ECC, TPM_RH_ENDORSEMENT, TPMA_OBJECT, TPMA_OBJECT_RESERVED } from "./constants.js"
import { TpmParseError } from "./errors.js"
import { algIdOf, digestSize, hashAlgFromId, type HashAlg } from "./hashAlg.js"

/** TPMT_SYM_DEF_OBJECT; `null` when the algorithm is TPM_ALG_NULL. */
export interface SymDef {
  readonly alg: number
  readonly keyBits: number
  readonly mode: number
}

/** A TPMT_*_SCHEME with its hash (raw ids); `count` only for ECDAA; `kdf` only for keyedhash XOR. */
export interface Scheme {
  readonly scheme: number
  readonly hashAlg: number
  readonly count?: number
  readonly kdf?: number
}

interface Common {
  readonly nameAlg: HashAlg
  readonly attributes: number
  readonly authPolicy: Uint8Array
}

export interface RsaPublicFields extends Common {
  readonly type: "rsa"
  readonly symmetric: SymDef | null
  readonly scheme: Scheme | null
  readonly keyBits: number
  /** 0 means the default 65537, as the TPM encodes it. */
  readonly exponent: number
  readonly modulus: Uint8Array
}

export interface EccPublicFields extends Common {
  readonly type: "ecc"
  readonly symmetric: SymDef | null
  readonly scheme: Scheme | null
  readonly curveId: number
  readonly kdf: Scheme | null
  readonly x: Uint8Array
  readonly y: Uint8Array
}

export interface KeyedHashPublicFields extends Common {
  readonly type: "keyedhash"
  readonly scheme: Scheme | null
  readonly unique: Uint8Array
}

export interface SymCipherPublicFields extends Common {
  readonly type: "symcipher"
  readonly symmetric: SymDef | null
  readonly unique: Uint8Array
}

export type TpmtPublicFields = RsaPublicFields | EccPublicFields | KeyedHashPublicFields | SymCipherPublicFields

/** A public area plus the exact TPMT_PUBLIC bytes it came from (or was marshalled to). */
export type TpmtPublic = TpmtPublicFields & { readonly bytes: Uint8Array }
export type RsaPublic = RsaPublicFields & { readonly bytes: Uint8Array }
export type EccPublic = EccPublicFields & { readonly bytes: Uint8Array }

// ---------------------------------------------------------------------------------------------
// parse

const readSymDef = (r: Reader): SymDef | null => {
  const alg = r.u16("TPMT_SYM_DEF_OBJECT")
  if (alg === TPM_ALG.null) return null
  if (alg === TPM_ALG.xor) r.fail(`XOR is not a TPMT_SYM_DEF_OBJECT algorithm`, "TPMT_SYM_DEF_OBJECT", r.offset - 2)
  return { alg, keyBits: r.u16("TPMT_SYM_DEF_OBJECT"), mode: r.u16("TPMT_SYM_DEF_OBJECT") }
}

const rsaSchemes: ReadonlySet<number> = new Set([TPM_ALG.rsassa, TPM_ALG.rsapss, TPM_ALG.oaep])
const eccSchemes: ReadonlySet<number> = new Set([TPM_ALG.ecdsa, TPM_ALG.ecdh, TPM_ALG.ecschnorr, TPM_ALG.ecdaa, 0x001b /* sm2 */, 0x001d /* ecmqv */])
const kdfSchemes: ReadonlySet<number> = new Set([0x0007 /* mgf1 */, 0x0020, 0x0021, 0x0022])

const readScheme = (r: Reader, structure: string, allowed: ReadonlySet<number>, empty: ReadonlySet<number> = new Set()): Scheme | null => {
  const at = r.offset
  const scheme = r.u16(structure)
  if (scheme === TPM_ALG.null) return null
  if (empty.has(scheme)) return { scheme, hashAlg: TPM_ALG.null }
  if (!allowed.has(scheme)) r.fail(`unsupported scheme 0x${scheme.toString(16)}`, structure, at)
  const hashAlg = r.u16(structure)
  if (scheme === TPM_ALG.ecdaa) return { scheme, hashAlg, count: r.u16(structure) }
  return { scheme, hashAlg }
}

const readKeyedHashScheme = (r: Reader): Scheme | null => {
  const at = r.offset
  const scheme = r.u16("TPMT_KEYEDHASH_SCHEME")
  if (scheme === TPM_ALG.null) return null
  if (scheme === TPM_ALG.hmac) return { scheme, hashAlg: r.u16("TPMT_KEYEDHASH_SCHEME") }
  if (scheme === TPM_ALG.xor) return { scheme, hashAlg: r.u16("TPMT_KEYEDHASH_SCHEME"), kdf: r.u16("TPMT_KEYEDHASH_SCHEME") }
  return r.fail(`unsupported keyedhash scheme 0x${scheme.toString(16)}`, "TPMT_KEYEDHASH_SCHEME", at)
}

/** Reads a TPMT_PUBLIC at the reader's position (for embedding in larger structures). */
export const readTpmtPublic = (r: Reader): TpmtPublic => {
  const start = r.offset
  const S = "TPMT_PUBLIC"
  const typeAt = r.offset
  const type = r.u16(S)
  const nameAt = r.offset
  const nameAlg = hashAlgFromId(r.u16(S))
  if (nameAlg === undefined) r.fail("unsupported nameAlg", S, nameAt)
  const attributesAt = r.offset
  const attributes = r.u32(S)
  // no TPM makes such an area: a key described with them is not one a TPM holds
  if ((attributes & TPMA_OBJECT_RESERVED) !== 0) {
    r.fail(`reserved TPMA_OBJECT bits set (0x${((attributes & TPMA_OBJECT_RESERVED) >>> 0).toString(16).padStart(8, "0")})`, S, attributesAt)
  }
  const authPolicy = r.tpm2b("TPMT_PUBLIC.authPolicy")
  let fields: TpmtPublicFields
  switch (type) {
    case TPM_ALG.rsa: {
      const symmetric = readSymDef(r)
      const scheme = readScheme(r, "TPMT_RSA_SCHEME", rsaSchemes, new Set([TPM_ALG.rsaes]))
      const keyBits = r.u16("TPMS_RSA_PARMS")
      const exponent = r.u32("TPMS_RSA_PARMS")
      const modulus = r.tpm2b("TPM2B_PUBLIC_KEY_RSA")
      fields = { type: "rsa", nameAlg, attributes, authPolicy, symmetric, scheme, keyBits, exponent, modulus }
      break
    }
    case TPM_ALG.ecc: {
      const symmetric = readSymDef(r)
      const scheme = readScheme(r, "TPMT_ECC_SCHEME", eccSchemes)
      const curveId = r.u16("TPMS_ECC_PARMS")
      const kdf = readScheme(r, "TPMT_KDF_SCHEME", kdfSchemes)
      const x = r.tpm2b("TPMS_ECC_POINT.x")
      const y = r.tpm2b("TPMS_ECC_POINT.y")
      fields = { type: "ecc", nameAlg, attributes, authPolicy, symmetric, scheme, curveId, kdf, x, y }
      break
    }
    case TPM_ALG.keyedhash: {
      const scheme = readKeyedHashScheme(r)
      fields = { type: "keyedhash", nameAlg, attributes, authPolicy, scheme, unique: r.tpm2b("TPM2B_DIGEST") }
      break
    }
    case TPM_ALG.symcipher: {
      const symmetric = readSymDef(r)
      fields = { type: "symcipher", nameAlg, attributes, authPolicy, symmetric, unique: r.tpm2b("TPM2B_DIGEST") }
      break
    }
    default:
      return r.fail(`unsupported public type 0x${type.toString(16)}`, S, typeAt)
  }
  return { ...fields, bytes: r.data.subarray(start, r.offset) }
}

/** TPMT_PUBLIC bytes (no size prefix), fully consumed. */
export const parseTpmtPublic = (bytes: Uint8Array): Either.Either<TpmtPublic, TpmParseError> =>
  parseWhole("TPMT_PUBLIC", bytes, readTpmtPublic)

/** Reads a TPM2B_PUBLIC whose size must match the TPMT_PUBLIC inside it. */
export const readTpm2bPublic = (r: Reader): TpmtPublic => {
  const sizeAt = r.offset
  const size = r.u16("TPM2B_PUBLIC")
  const end = r.offset + size
  if (end > r.data.length) r.fail(`size ${size} exceeds the buffer`, "TPM2B_PUBLIC", sizeAt)
  const pub = readTpmtPublic(r)
  if (r.offset !== end) r.fail(`size ${size} does not match TPMT_PUBLIC length ${pub.bytes.length}`, "TPM2B_PUBLIC", sizeAt)
  return pub
}

/** TPM2B_PUBLIC bytes (u16 size ‖ TPMT_PUBLIC), as tpm2-tools `-f tss` and Keylime `aik_tpm`. */
export const parseTpm2bPublic = (bytes: Uint8Array): Either.Either<TpmtPublic, TpmParseError> =>
  parseWhole("TPM2B_PUBLIC", bytes, readTpm2bPublic)

// ---------------------------------------------------------------------------------------------
// marshal

const writeSymDef = (w: Writer, s: SymDef | null): void => {
  if (s === null) w.u16(TPM_ALG.null)
  else w.u16(s.alg).u16(s.keyBits).u16(s.mode)
}

const writeScheme = (w: Writer, s: Scheme | null): void => {
  if (s === null) {
    w.u16(TPM_ALG.null)
    return
  }
  w.u16(s.scheme)
  if (s.scheme === TPM_ALG.rsaes) return
  w.u16(s.hashAlg)
  if (s.count !== undefined) w.u16(s.count)
  if (s.kdf !== undefined) w.u16(s.kdf)
}

export const writeTpmtPublic = (w: Writer, p: TpmtPublicFields): void => {
  w.u16(TPM_ALG[p.type]).u16(algIdOf(p.nameAlg)).u32(p.attributes >>> 0).tpm2b(p.authPolicy)
  switch (p.type) {
    case "rsa":
      writeSymDef(w, p.symmetric)
      writeScheme(w, p.scheme)
      w.u16(p.keyBits).u32(p.exponent >>> 0).tpm2b(p.modulus)
      break
    case "ecc":
      writeSymDef(w, p.symmetric)
      writeScheme(w, p.scheme)
      w.u16(p.curveId)
      writeScheme(w, p.kdf)
      w.tpm2b(p.x).tpm2b(p.y)
      break
    case "keyedhash":
      writeScheme(w, p.scheme)
      w.tpm2b(p.unique)
      break
    case "symcipher":
      writeSymDef(w, p.symmetric)
      w.tpm2b(p.unique)
      break
  }
}

export const marshalTpmtPublic = (p: TpmtPublicFields): Uint8Array => {
  const w = new Writer(512)
  writeTpmtPublic(w, p)
  return w.finish()
}

export const marshalTpm2bPublic = (p: TpmtPublicFields): Uint8Array => {
  const body = "bytes" in p && p.bytes instanceof Uint8Array ? p.bytes : marshalTpmtPublic(p)
  return new Writer(body.length + 2).tpm2b(body).finish()
}

/** Builds a TpmtPublic (with its bytes) from fields. */
export const makeTpmtPublic = <F extends TpmtPublicFields>(fields: F): F & { readonly bytes: Uint8Array } => ({
  ...fields,
  bytes: marshalTpmtPublic(fields)
})

// ---------------------------------------------------------------------------------------------
// keys, names, descriptions

const curveNames: Record<number, { readonly crv: Curve; readonly size: number; readonly bits: number }> = {
  [TPM_ECC.nistP256]: { crv: "P-256", size: 32, bits: 256 },
  [TPM_ECC.nistP384]: { crv: "P-384", size: 48, bits: 384 }
}

export const curveInfo = (curveId: number): { readonly crv: Curve; readonly size: number; readonly bits: number } | undefined =>
  curveNames[curveId]

export const curveIdOfBits = (bits: number): number | undefined =>
  bits === 256 ? TPM_ECC.nistP256 : bits === 384 ? TPM_ECC.nistP384 : undefined

const exponentBytes = (e: number): Uint8Array => {
  const v = e === 0 ? 65537 : e >>> 0
  const out: Array<number> = []
  for (let x = v; x > 0; x = Math.floor(x / 256)) out.unshift(x & 0xff)
  return Uint8Array.from(out)
}

const keyFail = (message: string) =>
  Either.left(new TpmParseError({ structure: "TPMT_PUBLIC", offset: 0, message }))

/** The public key of an RSA (2048/3072/…) or ECC (P-256/P-384) public area, through the crypto port. */
export const publicKeyOf = (pub: TpmtPublicFields): Either.Either<PublicKey, TpmParseError> => {
  if (pub.type === "rsa") {
    if (pub.modulus.length * 8 !== pub.keyBits) return keyFail(`RSA modulus is ${pub.modulus.length * 8} bits, keyBits says ${pub.keyBits}`)
    const k = cryptoPort().importKey({ type: "rsa", n: pub.modulus, e: exponentBytes(pub.exponent) })
    return typeof k === "string" ? keyFail(k) : Either.right(k)
  }
  if (pub.type === "ecc") {
    const c = curveNames[pub.curveId]
    if (c === undefined) return keyFail(`unsupported ECC curve 0x${pub.curveId.toString(16)}`)
    if (pub.x.length > c.size || pub.y.length > c.size) return keyFail(`ECC point larger than ${c.crv}`)
    const k = cryptoPort().importKey({ type: "ec", curve: c.crv, x: pub.x, y: pub.y })
    return typeof k === "string" ? keyFail(k) : Either.right(k)
  }
  return keyFail(`a ${pub.type} object has no asymmetric public key`)
}

const hashWithAlg = (alg: HashAlg, ...parts: ReadonlyArray<Uint8Array>): Uint8Array => {
  const h = cryptoPort().hasher(alg)
  for (const p of parts) h.update(p)
  return h.digest()
}

const u16be = (v: number): Uint8Array => Uint8Array.of((v >>> 8) & 0xff, v & 0xff)

/** Name = u16 nameAlg ‖ H_nameAlg(TPMT_PUBLIC bytes). */
export const objectName = (pub: TpmtPublic | Uint8Array, nameAlg?: HashAlg): Either.Either<Uint8Array, TpmParseError> => {
  if (pub instanceof Uint8Array) {
    if (nameAlg !== undefined) return Either.right(concatBytes(u16be(algIdOf(nameAlg)), hashWithAlg(nameAlg, pub)))
    return Either.map(parseTpmtPublic(pub), (p) => concatBytes(u16be(algIdOf(p.nameAlg)), hashWithAlg(p.nameAlg, p.bytes)))
  }
  return Either.right(concatBytes(u16be(algIdOf(pub.nameAlg)), hashWithAlg(pub.nameAlg, pub.bytes)))
}

/** Name of a parsed public area (cannot fail). */
export const nameOf = (pub: TpmtPublic): Uint8Array =>
  concatBytes(u16be(algIdOf(pub.nameAlg)), hashWithAlg(pub.nameAlg, pub.bytes))

/** QN(child) = nameAlg ‖ H_nameAlg(QN(parent) ‖ Name(child)); nameAlg is the child's. */
export const qualifiedName = (parentQualifiedName: Uint8Array, name: Uint8Array): Either.Either<Uint8Array, TpmParseError> => {
  const alg = name.length >= 2 ? hashAlgFromId((name[0]! << 8) | name[1]!) : undefined
  if (alg === undefined || name.length !== 2 + digestSize(alg)) {
    return Either.left(new TpmParseError({ structure: "TPM2B_NAME", offset: 0, message: "not a digest name" }))
  }
  return Either.right(concatBytes(name.subarray(0, 2), hashWithAlg(alg, parentQualifiedName, name)))
}

const endorsementHandle = Uint8Array.of(
  (TPM_RH_ENDORSEMENT >>> 24) & 0xff, (TPM_RH_ENDORSEMENT >>> 16) & 0xff, (TPM_RH_ENDORSEMENT >>> 8) & 0xff, TPM_RH_ENDORSEMENT & 0xff
)

/** QN(EK) = nameAlg ‖ H(0x4000000B ‖ Name(EK)): the EK is a primary of the endorsement hierarchy. */
export const ekQualifiedName = (ekName: Uint8Array): Either.Either<Uint8Array, TpmParseError> =>
  qualifiedName(endorsementHandle, ekName)

export const hasAttribute = (pub: TpmtPublicFields, bit: number): boolean => (pub.attributes & bit) !== 0

/** A restricted signing key (AK): restricted + sign, not decrypt. */
export const isRestrictedSigningKey = (pub: TpmtPublicFields): boolean =>
  hasAttribute(pub, TPMA_OBJECT.restricted) && hasAttribute(pub, TPMA_OBJECT.sign) && !hasAttribute(pub, TPMA_OBJECT.decrypt)

const schemeNames: Record<number, string> = {
  [TPM_ALG.rsassa]: "rsassa",
  [TPM_ALG.rsapss]: "rsapss",
  [TPM_ALG.rsaes]: "rsaes",
  [TPM_ALG.oaep]: "oaep",
  [TPM_ALG.ecdsa]: "ecdsa",
  [TPM_ALG.ecdh]: "ecdh",
  [TPM_ALG.ecdaa]: "ecdaa",
  [TPM_ALG.ecschnorr]: "ecschnorr",
  [TPM_ALG.hmac]: "hmac",
  [TPM_ALG.xor]: "xor"
}

export const schemeName = (id: number): string => schemeNames[id] ?? `0x${id.toString(16).padStart(4, "0")}`

export interface PublicDescription {
  readonly type: TpmtPublicFields["type"]
  readonly nameAlg: HashAlg
  /** RSA key size or curve size. */
  readonly bits?: number
  readonly curve?: string
  /** "rsassa", "ecdsa", … or undefined when the scheme is TPM_ALG_NULL. */
  readonly scheme?: string
  readonly schemeHash?: HashAlg
  readonly restrictedSigning: boolean
}

export const describePublic = (pub: TpmtPublicFields): PublicDescription => {
  const scheme = pub.type === "symcipher" ? null : pub.scheme
  const schemeHash = scheme === null ? undefined : hashAlgFromId(scheme.hashAlg)
  const c = pub.type === "ecc" ? curveNames[pub.curveId] : undefined
  const bits = pub.type === "rsa" ? pub.keyBits : c?.bits
  return {
    type: pub.type,
    nameAlg: pub.nameAlg,
    restrictedSigning: isRestrictedSigningKey(pub),
    ...(bits !== undefined ? { bits } : {}),
    ...(c !== undefined ? { curve: c.crv } : {}),
    ...(scheme !== null ? { scheme: schemeName(scheme.scheme) } : {}),
    ...(schemeHash !== undefined ? { schemeHash } : {})
  }
}
