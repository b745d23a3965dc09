/**
 * SEV-SNP test material: the real Milan vectors, and a test chain ARK → ASK → VCEK issued with the
 * project's own CA code (src/pki/certificate.ts, AMD's extensions from vcekExtensions) whose VCEK
 * signs reports the tests build, so freshness and policy rules can be exercised.
 */
import { createHash, generateKeyPairSync, type KeyObject } from "node:crypto"
import { Either } from "effect"
import { generateKeyPair, issueCertificate, type KeyKind } from "../../src/pki/certificate.js"
import { makeSnpRoots, type SnpRoots } from "../../src/tee/snp/chain.js"
import { encodeSnpReport, type SnpReportFields } from "../../src/tee/snp/report.js"
import { signReport } from "../../src/tee/snp/sign.js"
import { encodeTcb, type ProductLine, type TcbParts } from "../../src/tee/snp/tcb.js"
import { vcekExtensions } from "../../src/tee/snp/vcek.js"
import { readVector, readVectorText } from "../support/vectors.js"

export const milanReport = (): Uint8Array => new Uint8Array(Buffer.from(readVectorText("snp", "report_milan.hex").trim(), "hex"))
export const milanVcek = (): Uint8Array => readVector("snp", "vcek_milan.der")
export const turinVcek = (): Uint8Array => readVector("snp", "vcek_turin.der")

const b64 = (b: Uint8Array) => Buffer.from(b).toString("base64")

/** A TEE key pair's public coordinates as the request carries them (URL-safe base64, no padding). */
export const teeKey = (curve: "P-256" | "P-384" = "P-384") => {
  const jwk = generateKeyPairSync("ec", { namedCurve: curve }).publicKey.export({ format: "jwk" })
  return { x: jwk.x!, y: jwk.y!, xBytes: new Uint8Array(Buffer.from(jwk.x!, "base64url")), yBytes: new Uint8Array(Buffer.from(jwk.y!, "base64url")) }
}

export interface TestChain {
  readonly product: ProductLine
  readonly roots: SnpRoots
  readonly arkDer: Uint8Array
  readonly askDer: Uint8Array
  readonly vcekDer: Uint8Array
  readonly vcekKey: KeyObject
  readonly tcb: TcbParts
  readonly chipId: Uint8Array
}

const amdName = (cn: string) => ({ OU: "Engineering", C: "US", L: "Santa Clara", ST: "CA", O: "Advanced Micro Devices", CN: cn })

export interface ChainOptions {
  readonly product?: ProductLine
  readonly tcb?: TcbParts
  readonly chipId?: Uint8Array
  readonly vcekKeyKind?: KeyKind
  readonly notBefore?: Date
  readonly notAfter?: Date
}

/** ARK (self-signed) → ASK → VCEK for one product line, with the project's CA code. */
export const makeTestChain = (o: ChainOptions = {}): TestChain => {
  const product = o.product ?? "Milan"
  const tcb = o.tcb ?? (product === "Turin" ? { fmc: 1, bootloader: 2, tee: 0, snp: 5, microcode: 0x40 } : { bootloader: 3, tee: 0, snp: 8, microcode: 115 })
  const chipId = o.chipId ?? (product === "Turin" ? new Uint8Array([...Array.from({ length: 8 }, (_, i) => 0xa0 + i), ...new Uint8Array(56)]) : new Uint8Array(64).map((_, i) => (i * 7 + 1) & 0xff))
  const notBefore = o.notBefore ?? new Date("2024-01-01T00:00:00Z")
  const notAfter = o.notAfter ?? new Date("2049-01-01T00:00:00Z")
  const arkKey = generateKeyPair("ec-p384")
  const askKey = generateKeyPair("ec-p384")
  const vcekKey = generateKeyPair(o.vcekKeyKind ?? "ec-p384")
  const get = (e: Either.Either<Uint8Array, { readonly reason: string }>) => Either.getOrThrowWith(e, (err) => new Error(err.reason))
  const arkDer = get(issueCertificate({
    subject: amdName(`ARK-${product}`),
    publicKey: arkKey.publicKey,
    signingKey: arkKey.privateKey,
    notBefore,
    notAfter,
    basicConstraints: { ca: true },
    keyUsage: ["keyCertSign", "cRLSign"]
  }))
  const askDer = get(issueCertificate({
    subject: amdName(`SEV-${product}`),
    publicKey: askKey.publicKey,
    issuer: { certificate: arkDer, privateKey: arkKey.privateKey },
    notBefore,
    notAfter,
    basicConstraints: { ca: true, pathLen: 0 },
    keyUsage: ["keyCertSign", "cRLSign"]
  }))
  const hwId = product === "Turin" ? chipId.subarray(0, 8) : chipId
  const vcekDer = get(issueCertificate({
    subject: amdName("SEV-VCEK"),
    publicKey: vcekKey.publicKey,
    issuer: { certificate: askDer, privateKey: askKey.privateKey },
    notBefore,
    notAfter,
    extensions: vcekExtensions({ productName: product === "Turin" ? "Turin" : `${product}-B0`, tcb, hwId })
  }))
  const roots = Either.getOrThrowWith(makeSnpRoots({ [product]: { ark: arkDer, ask: askDer } }), (e) => new Error(e.message))
  return { product, roots, arkDer, askDer, vcekDer, vcekKey: vcekKey.privateKey, tcb, chipId }
}

export interface Freshness {
  readonly nonce: Uint8Array
  readonly x: string
  readonly y: string
  readonly xBytes: Uint8Array
  readonly yBytes: Uint8Array
}

export const freshness = (nonce = "attest-test-nonce"): Freshness => ({ nonce: new TextEncoder().encode(nonce), ...teeKey() })

export const reportDataOf = (f: Freshness): Uint8Array =>
  new Uint8Array(createHash("sha512").update(f.xBytes).update(f.yBytes).update(f.nonce).digest())

/** A report for the chain's chip and TCB, bound to `f`, signed by the chain's VCEK. */
export const signedReport = (chain: TestChain, f: Freshness, fields: SnpReportFields = {}): Uint8Array =>
  signReport(
    encodeSnpReport({
      version: chain.product === "Turin" ? 5 : 2,
      reportData: reportDataOf(f),
      measurement: new Uint8Array(48).fill(0x4d),
      reportedTcb: encodeTcb(chain.tcb, chain.product),
      currentTcb: encodeTcb(chain.tcb, chain.product),
      chipId: chain.chipId,
      ...fields
    }),
    chain.vcekKey
  )

/** The request's `data` in Keylime's shape. */
export const requestData = (report: Uint8Array, f: Freshness, vcekDer?: Uint8Array, extra: Record<string, unknown> = {}) => ({
  nonce: b64(f.nonce),
  "tee-pubkey-x-b64": f.x,
  "tee-pubkey-y-b64": f.y,
  "tee-evidence": { tee: "snp", evidence: { "snp-report": b64(report), ...(vcekDer === undefined ? {} : { vcek: b64(vcekDer) }) } },
  ...extra
})
