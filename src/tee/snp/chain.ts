/**
 * The VCEK's chain of trust: ARK (AMD root, self-signed) → ASK (signing key) → VCEK, for the product
 * line the VCEK names. The roots are AMD's, shipped with attest (amdRoots.ts), or any set given
 * (tests use their own). The walk checks what a chain validation does (issuer, signature, validity,
 * CA flag, path length) with certificates read in plain code and signatures checked through the
 * crypto port (AMD signs with RSASSA-PSS), so it runs on node and in a browser alike. A verified VCEK
 * is cached with the window in which its whole chain is valid, so each later use only compares the time.
 */
import { Data, Either } from "effect"
import { cryptoPort } from "../../crypto/active.js"
import { utf8, utf8Bytes } from "../../crypto/encoding.js"
import type { PublicKey } from "../../crypto/port.js"
import { type Certificate, mayHaveIssued, readCertificate, signatureSchemeOf } from "../../crypto/x509.js"
import { fromPem, isPemText } from "../../crypto/pem.js"
import { AMD_ROOT_PEMS } from "./amdRoots.js"
import { PRODUCT_LINES, type ProductLine } from "./tcb.js"
import type { Vcek } from "./vcek.js"

export interface SnpRootPair {
  readonly ark: Certificate
  readonly ask: Certificate
}

/** Roots per product line. */
export type SnpRoots = ReadonlyMap<ProductLine, SnpRootPair>

/** A root set that is not one: an ARK that is not self-signed, an ASK the ARK did not sign, unreadable PEM. */
export class SnpRootsError extends Data.TaggedError("SnpRootsError")<{ readonly product: string; readonly reason: string }> {
  override get message(): string {
    return `SEV-SNP roots for ${this.product}: ${this.reason}`
  }
}

const one = (product: ProductLine, what: string, input: string | Uint8Array): Either.Either<Certificate, SnpRootsError> => {
  const bytes = typeof input === "string" ? utf8Bytes(input) : input
  const ders = isPemText(bytes) ? fromPem(typeof input === "string" ? input : utf8(bytes)).filter((b) => b.label === "CERTIFICATE").map((b) => b.der) : [bytes]
  if (ders.length !== 1) return Either.left(new SnpRootsError({ product, reason: `${what}: expected one certificate, found ${ders.length}` }))
  return Either.mapLeft(readCertificate(ders[0]!), (reason) => new SnpRootsError({ product, reason: `${what}: ${reason}` }))
}

// Roots and VCEKs are long-lived: their keys are read once.
const keys = new WeakMap<Certificate, PublicKey | undefined>()
const keyOf = (c: Certificate): PublicKey | undefined => {
  if (!keys.has(c)) keys.set(c, cryptoPort().publicKeyFrom(c.spki))
  return keys.get(c)
}

/** The issuer's key verifies the certificate's signature. */
export const signedBy = (cert: Certificate, issuer: Certificate): boolean => {
  const scheme = signatureSchemeOf(cert)
  const key = keyOf(issuer)
  return typeof scheme !== "string" && key !== undefined && cryptoPort().verify(key, scheme, cert.tbs, cert.signature)
}

/** Builds a root set: each ARK must be self-signed and sign its ASK. */
export const makeSnpRoots = (
  pems: Partial<Record<ProductLine, { readonly ark: string | Uint8Array; readonly ask: string | Uint8Array }>>
): Either.Either<SnpRoots, SnpRootsError> =>
  Either.gen(function*() {
    const roots = new Map<ProductLine, SnpRootPair>()
    for (const product of PRODUCT_LINES) {
      const p = pems[product]
      if (p === undefined) continue
      const ark = yield* one(product, "ARK", p.ark)
      const ask = yield* one(product, "ASK", p.ask)
      if (!mayHaveIssued(ark, ark) || !signedBy(ark, ark)) return yield* Either.left(new SnpRootsError({ product, reason: "the ARK is not self-signed" }))
      if (!mayHaveIssued(ark, ask) || !signedBy(ask, ark)) return yield* Either.left(new SnpRootsError({ product, reason: "the ASK is not signed by the ARK" }))
      roots.set(product, { ark, ask })
    }
    return roots
  })

let amd: SnpRoots | undefined
/**
 * AMD's roots for Milan, Genoa and Turin, checked once on first use. With the portable crypto port
 * their RSA signatures are answered by WebCrypto: call inside `settleSignatures` (its first run
 * records the checks; the set is kept only once they verified).
 */
export const amdRoots = (): SnpRoots => {
  if (amd !== undefined) return amd
  const pending = cryptoPort().pendingChecks()
  // Shipped constants checked by the tests: a failure here is a broken build, not an input error,
  // unless the port is still waiting for its RSA answers (then the next run checks them).
  const roots = makeSnpRoots(AMD_ROOT_PEMS)
  if (Either.isLeft(roots)) {
    if (cryptoPort().pendingChecks() > pending) return new Map()
    throw new Error(roots.left.message)
  }
  amd = roots.right
  return amd
}

/** A VCEK whose chain verified, and when that chain is valid. */
export interface VerifiedVcek {
  readonly vcek: Vcek
  readonly roots: SnpRoots
  /** Latest notBefore and earliest notAfter of VCEK, ASK and ARK (ms since the epoch). */
  readonly validFrom: number
  readonly validUntil: number
}

/** Why a VCEK does not chain to the roots of its product line. */
export type ChainFailure = { readonly reason: string }

const subjectOf = (c: Certificate): string => c.subjectText || "(empty subject)"

/** Why `c` is not valid at `now`, or undefined. */
const timeProblem = (c: Certificate, now: Date): string | undefined =>
  now.getTime() > c.notAfter.getTime()
    ? `certificate ${subjectOf(c)} expired at ${c.notAfter.toISOString()}`
    : now.getTime() < c.notBefore.getTime()
      ? `certificate ${subjectOf(c)} is not valid before ${c.notBefore.toISOString()}`
      : undefined

/** One link: `issuer` issued and signed `cert`, and may issue CA certificates below it (`below` of them). */
const linkProblem = (cert: Certificate, issuer: Certificate, below: number): string | undefined => {
  if (!mayHaveIssued(issuer, cert)) return `certificate ${subjectOf(cert)} is issued by ${cert.issuerText || "(empty issuer)"}, not by ${subjectOf(issuer)}`
  if (!signedBy(cert, issuer)) return `signature of certificate ${subjectOf(cert)} does not verify with the key of its issuer ${subjectOf(issuer)}`
  if (!issuer.ca) return `issuer ${subjectOf(issuer)} is not a CA (basicConstraints cA is not set)`
  if (issuer.pathLen !== undefined && below > issuer.pathLen) return `issuer ${subjectOf(issuer)} allows ${issuer.pathLen} intermediate CA(s) below it, the chain has ${below}`
  return undefined
}

/** Verifies ARK → ASK → VCEK for the VCEK's product line at `now`. */
export const verifyVcekChain = (vcek: Vcek, roots: SnpRoots, now: Date): Either.Either<VerifiedVcek, ChainFailure> => {
  const pair = roots.get(vcek.product)
  if (pair === undefined) return Either.left({ reason: `no ARK/ASK for ${vcek.product} (the VCEK's product ${vcek.productName})` })
  const path = [vcek.certificate, pair.ask, pair.ark]
  const problem =
    timeProblem(vcek.certificate, now) ??
    linkProblem(vcek.certificate, pair.ask, 0) ??
    timeProblem(pair.ask, now) ??
    linkProblem(pair.ask, pair.ark, 1) ??
    timeProblem(pair.ark, now)
  if (problem !== undefined) return Either.left({ reason: `${vcek.product} chain ARK → ASK → VCEK: ${problem}` })
  return Either.right({
    vcek,
    roots,
    validFrom: Math.max(...path.map((c) => c.notBefore.getTime())),
    validUntil: Math.min(...path.map((c) => c.notAfter.getTime()))
  })
}

/** Chain results per VCEK (keyed by its base64 DER), least recently used evicted first. */
export interface ChainCache {
  readonly get: (key: string) => VerifiedVcek | undefined
  readonly set: (key: string, value: VerifiedVcek) => void
  readonly size: () => number
}

/** A cache of verified chains; `capacity` bounds memory when requests bring many VCEKs. */
export const makeChainCache = (capacity = 1024): ChainCache => {
  const map = new Map<string, VerifiedVcek>()
  return {
    get: (key) => {
      const v = map.get(key)
      if (v !== undefined) {
        map.delete(key)
        map.set(key, v)
      }
      return v
    },
    set: (key, value) => {
      map.delete(key)
      map.set(key, value)
      if (map.size > capacity) map.delete(map.keys().next().value!)
    },
    size: () => map.size
  }
}
