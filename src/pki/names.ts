/** X.501 names and GeneralNames for certificates, built with pkijs. */
import * as asn1js from "asn1js"
import * as net from "node:net"
import * as pkijs from "pkijs"

/** One attribute of a name by OID, e.g. the TCG attributes 2.23.133.2.1/2/3 of EK certificates. */
export interface NameAttribute {
  readonly type: string
  readonly value: string
}

/** A distinguished name; encoded in the order C, ST, L, O, OU, CN, then `extra`. */
export interface DistinguishedName {
  readonly C?: string
  readonly ST?: string
  readonly L?: string
  readonly O?: string
  readonly OU?: string
  readonly CN?: string
  readonly serialNumber?: string
  readonly extra?: ReadonlyArray<NameAttribute>
}

export const OID = {
  C: "2.5.4.6",
  ST: "2.5.4.8",
  L: "2.5.4.7",
  O: "2.5.4.10",
  OU: "2.5.4.11",
  CN: "2.5.4.3",
  serialNumber: "2.5.4.5",
  tcgManufacturer: "2.23.133.2.1",
  tcgModel: "2.23.133.2.2",
  tcgVersion: "2.23.133.2.3"
} as const

const SHORT: Record<string, string> = Object.fromEntries(
  Object.entries(OID).map(([k, v]) => [v, k.startsWith("tcg") ? `TPM${k.slice(3)}` : k])
)

// C and serialNumber are PrintableString by RFC 5280; everything else UTF8String.
const attrValue = (oid: string, value: string) =>
  oid === OID.C || oid === OID.serialNumber ? new asn1js.PrintableString({ value }) : new asn1js.Utf8String({ value })

export const buildName = (dn: DistinguishedName): pkijs.RelativeDistinguishedNames => {
  const attrs: Array<NameAttribute> = []
  for (const k of ["C", "ST", "L", "O", "OU", "CN", "serialNumber"] as const) {
    const v = dn[k]
    if (v !== undefined) attrs.push({ type: OID[k], value: v })
  }
  attrs.push(...(dn.extra ?? []))
  // One attribute per RDN (pkijs would put them all in one multi-valued SET), then decoded so
  // pkijs keeps these exact bytes.
  const der = new asn1js.Sequence({
    value: attrs.map((a) =>
      new asn1js.Set({ value: [new pkijs.AttributeTypeAndValue({ type: a.type, value: attrValue(a.type, a.value) }).toSchema()] })
    )
  }).toBER(false)
  return pkijs.RelativeDistinguishedNames.fromBER(der)
}

/** The TCG directoryName an EK certificate carries in its subjectAltName (TCG EK profile §3.2.9). */
export const tcgDirectoryName = (tpm: { manufacturer: string; model: string; version: string }): ReadonlyArray<NameAttribute> => [
  { type: OID.tcgManufacturer, value: tpm.manufacturer },
  { type: OID.tcgModel, value: tpm.model },
  { type: OID.tcgVersion, value: tpm.version }
]

/** "CN=x, O=y" for messages and `attest ca list`. */
export const formatName = (name: pkijs.RelativeDistinguishedNames): string =>
  name.typesAndValues
    .map((tv) => `${SHORT[tv.type] ?? tv.type}=${String(tv.value.valueBlock.value ?? "")}`)
    .join(", ")

export const ipToBytes = (ip: string): Uint8Array | undefined => {
  if (net.isIPv4(ip)) return new Uint8Array(ip.split(".").map(Number))
  if (!net.isIPv6(ip)) return undefined
  const [head = "", tail] = ip.split("::")
  const groups = (s: string) => (s === "" ? [] : s.split(":"))
  const h = groups(head)
  const t = tail === undefined ? [] : groups(tail)
  // an embedded IPv4 tail counts as two groups
  const expand = (gs: Array<string>) =>
    gs.flatMap((g) => {
      if (!g.includes(".")) return [g]
      const b = g.split(".").map(Number)
      return [((b[0]! << 8) | b[1]!).toString(16), ((b[2]! << 8) | b[3]!).toString(16)]
    })
  const he = expand(h)
  const te = expand(t)
  const all = tail === undefined ? he : [...he, ...Array<string>(8 - he.length - te.length).fill("0"), ...te]
  const out = new Uint8Array(16)
  all.forEach((g, i) => {
    const n = parseInt(g, 16)
    out[2 * i] = n >> 8
    out[2 * i + 1] = n & 0xff
  })
  return out
}

export const bytesToIp = (b: Uint8Array): string =>
  b.length === 4
    ? Array.from(b).join(".")
    : Array.from({ length: b.length / 2 }, (_, i) => ((b[2 * i]! << 8) | b[2 * i + 1]!).toString(16)).join(":")
