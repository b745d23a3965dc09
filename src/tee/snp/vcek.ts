/**
 * The VCEK (Versioned Chip Endorsement Key) certificate: an X.509 certificate from AMD's ASK whose
 * P-384 key signs a chip's reports at one TCB. AMD's extensions (under 1.3.6.1.4.1.3704.1) name the
 * product (`Milan-B0`, `Genoa-B1`, `Turin`), the TCB security patch levels the key was derived for
 * (INTEGERs), and the chip's hardware id (raw bytes: 64 for Milan and Genoa, 8 for Turin).
 * Read with the project's DER walker (src/crypto/x509.ts), on node and in a browser alike; failures
 * are typed and name the extension.
 * `vcekExtensions` writes the same extensions (as src/pki/certificate.ts's extra extensions), so tests
 * can issue VCEKs with the project's CA code.
 */
import * as asn1js from "asn1js"
import { Data, Either } from "effect"
import { cryptoPort } from "../../crypto/active.js"
import { latin1 } from "../../crypto/encoding.js"
import type { PublicKey } from "../../crypto/port.js"
import { type Certificate, readCertificate } from "../../crypto/x509.js"
import { readTlv } from "../../crypto/der.js"
import { productLineOf, type ProductLine, type TcbParts } from "./tcb.js"

export const AMD_VCEK_OID = {
  structVersion: "1.3.6.1.4.1.3704.1.1",
  productName: "1.3.6.1.4.1.3704.1.2",
  blSPL: "1.3.6.1.4.1.3704.1.3.1",
  teeSPL: "1.3.6.1.4.1.3704.1.3.2",
  snpSPL: "1.3.6.1.4.1.3704.1.3.3",
  ucodeSPL: "1.3.6.1.4.1.3704.1.3.8",
  fmcSPL: "1.3.6.1.4.1.3704.1.3.9",
  hwId: "1.3.6.1.4.1.3704.1.4"
} as const

/** Not a usable VCEK: `reason` says what is missing or malformed. */
export class VcekError extends Data.TaggedError("VcekError")<{ readonly reason: string }> {
  override get message(): string {
    return `VCEK ${this.reason}`
  }
}

export interface Vcek {
  readonly der: Uint8Array
  readonly certificate: Certificate
  readonly productName: string
  readonly product: ProductLine
  /** The TCB the key was derived for. */
  readonly tcb: TcbParts
  readonly hwId: Uint8Array
  readonly publicKey: PublicKey
}

const fail = (reason: string) => Either.left(new VcekError({ reason }))

/** An SPL extension: a DER INTEGER 0..255. */
const spl = (value: Uint8Array, name: string): Either.Either<number, VcekError> => {
  const tlv = readTlv(value, 0)
  if (Either.isLeft(tlv) || tlv.right.tag !== 0x02 || tlv.right.end !== value.length) return fail(`extension ${name} is not a DER INTEGER`)
  let n = 0
  for (let i = tlv.right.body; i < tlv.right.end; i++) n = n * 256 + value[i]!
  return n <= 255 ? Either.right(n) : fail(`extension ${name} is ${n}, above 255`)
}

/** productName: an IA5String (older VCEKs: the raw text). */
const text = (value: Uint8Array): string => {
  const tlv = readTlv(value, 0)
  const body = Either.isRight(tlv) && tlv.right.tag === 0x16 && tlv.right.end === value.length ? value.subarray(tlv.right.body) : value
  return latin1(body)
}

/** hwID: the raw id, or the same wrapped in an OCTET STRING. */
const hwIdOf = (value: Uint8Array): Uint8Array => {
  const tlv = readTlv(value, 0)
  const wrapped = Either.isRight(tlv) && tlv.right.tag === 0x04 && tlv.right.end === value.length && (tlv.right.end - tlv.right.body === 64 || tlv.right.end - tlv.right.body === 8)
  return wrapped ? value.subarray(tlv.right.body) : value
}

export const parseVcek = (der: Uint8Array): Either.Either<Vcek, VcekError> =>
  Either.gen(function*() {
    const certificate = yield* Either.mapLeft(readCertificate(der), (reason) => new VcekError({ reason: `is not an X.509 certificate: ${reason}` }))
    const ext = (oid: string, name: string) => {
      const e = certificate.extensions.get(oid)
      return e === undefined ? fail(`lacks AMD's ${name} extension (${oid})`) : Either.right(e.value)
    }
    const productName = text(yield* ext(AMD_VCEK_OID.productName, "productName"))
    const product = productLineOf(productName)
    if (product === undefined) return yield* fail(`names product '${productName}'; attest knows Milan, Genoa and Turin`)
    const tcb: TcbParts = {
      bootloader: yield* spl(yield* ext(AMD_VCEK_OID.blSPL, "blSPL"), "blSPL"),
      tee: yield* spl(yield* ext(AMD_VCEK_OID.teeSPL, "teeSPL"), "teeSPL"),
      snp: yield* spl(yield* ext(AMD_VCEK_OID.snpSPL, "snpSPL"), "snpSPL"),
      microcode: yield* spl(yield* ext(AMD_VCEK_OID.ucodeSPL, "ucodeSPL"), "ucodeSPL"),
      ...(product === "Turin" ? { fmc: yield* spl(yield* ext(AMD_VCEK_OID.fmcSPL, "fmcSPL"), "fmcSPL") } : {})
    }
    const hwId = hwIdOf(yield* ext(AMD_VCEK_OID.hwId, "hwID"))
    const wantLength = product === "Turin" ? 8 : 64
    if (hwId.length !== wantLength) return yield* fail(`hwID is ${hwId.length} bytes, a ${product} chip id is ${wantLength}`)
    const publicKey = cryptoPort().publicKeyFrom(certificate.spki)
    if (publicKey === undefined) return yield* fail("has a public key attest cannot read")
    return { der: new Uint8Array(certificate.der), certificate, productName, product, tcb, hwId: new Uint8Array(hwId), publicKey }
  })

/** True when the VCEK's key is the P-384 key reports are signed with. */
export const isP384 = (key: PublicKey): boolean => key.type === "ec" && key.curve === "P-384"

const integer = (n: number) => new Uint8Array(new asn1js.Integer({ value: n }).toBER(false))

/** AMD's VCEK extensions as AMD writes them (INTEGER SPLs, IA5String product, raw hwID), for issuing test VCEKs. */
export const vcekExtensions = (v: { readonly productName: string; readonly tcb: TcbParts; readonly hwId: Uint8Array }): ReadonlyArray<{ readonly oid: string; readonly value: Uint8Array }> => [
  { oid: AMD_VCEK_OID.structVersion, value: integer(1) },
  { oid: AMD_VCEK_OID.productName, value: new Uint8Array(new asn1js.IA5String({ value: v.productName }).toBER(false)) },
  { oid: AMD_VCEK_OID.blSPL, value: integer(v.tcb.bootloader) },
  { oid: AMD_VCEK_OID.teeSPL, value: integer(v.tcb.tee) },
  { oid: AMD_VCEK_OID.snpSPL, value: integer(v.tcb.snp) },
  { oid: AMD_VCEK_OID.ucodeSPL, value: integer(v.tcb.microcode) },
  ...(v.tcb.fmc === undefined ? [] : [{ oid: AMD_VCEK_OID.fmcSPL, value: integer(v.tcb.fmc) }]),
  { oid: AMD_VCEK_OID.hwId, value: v.hwId }
]
