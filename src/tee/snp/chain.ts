/**
 * The VCEK's chain of trust: ARK (AMD root, self-signed) → ASK (signing key) → VCEK, for the product
 * line the VCEK names. The roots are AMD's, shipped with attest (amdRoots.ts), or any set given
 * (tests use their own). The walk is the project's chain validation (src/pki/chain.ts: issuer,
 * signature, validity, CA flag, path length). A verified VCEK is cached with the window in which
 * its whole chain is valid, so each later use only compares the time.
 */
import * as crypto from "node:crypto"
import { Data, Either } from "effect"
import { trustStoreOf, type TrustStore, verifyChain } from "../../pki/chain.js"
import { parseCertificates, validity } from "../../pki/parse.js"
import { AMD_ROOT_PEMS } from "./amdRoots.js"
import { PRODUCT_LINES, type ProductLine } from "./tcb.js"
import type { Vcek } from "./vcek.js"

export interface SnpRootPair {
  readonly ark: crypto.X509Certificate
  readonly ask: crypto.X509Certificate
  /** The ARK as the only trust anchor. */
  readonly store: TrustStore
}

/** Roots per product line. */
export type SnpRoots = ReadonlyMap<ProductLine, SnpRootPair>

/** A root set that is not one: an ARK that is not self-signed, an ASK the ARK did not sign, unreadable PEM. */
export class SnpRootsError extends Data.TaggedError("SnpRootsError")<{ readonly product: string; readonly reason: string }> {
  override get message(): string {
    return `SEV-SNP roots for ${this.product}: ${this.reason}`
  }
}

const one = (product: ProductLine, what: string, input: string | Uint8Array): Either.Either<crypto.X509Certificate, SnpRootsError> => {
  const parsed = parseCertificates(typeof input === "string" ? new TextEncoder().encode(input) : input)
  if (Either.isLeft(parsed)) return Either.left(new SnpRootsError({ product, reason: `${what}: ${parsed.left.reason}` }))
  if (parsed.right.length !== 1) return Either.left(new SnpRootsError({ product, reason: `${what}: expected one certificate, found ${parsed.right.length}` }))
  return Either.right(parsed.right[0]!)
}

const signedBy = (x: crypto.X509Certificate, issuer: crypto.X509Certificate): boolean => {
  try {
    return x.verify(issuer.publicKey)
  } catch {
    return false
  }
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
      if (!ark.checkIssued(ark) || !signedBy(ark, ark)) return yield* Either.left(new SnpRootsError({ product, reason: "the ARK is not self-signed" }))
      if (!ask.checkIssued(ark) || !signedBy(ask, ark)) return yield* Either.left(new SnpRootsError({ product, reason: "the ASK is not signed by the ARK" }))
      roots.set(product, { ark, ask, store: trustStoreOf([ark], `AMD ARK-${product}`) })
    }
    return roots
  })

let amd: SnpRoots | undefined
/** AMD's roots for Milan, Genoa and Turin, checked once on first use. */
export const amdRoots = (): SnpRoots => {
  // Shipped constants checked by the tests: a failure here is a broken build, not an input error.
  amd ??= Either.getOrThrowWith(makeSnpRoots(AMD_ROOT_PEMS), (e) => new Error(e.message))
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

/** Verifies ARK → ASK → VCEK for the VCEK's product line at `now`. */
export const verifyVcekChain = (vcek: Vcek, roots: SnpRoots, now: Date): Either.Either<VerifiedVcek, ChainFailure> => {
  const pair = roots.get(vcek.product)
  if (pair === undefined) return Either.left({ reason: `no ARK/ASK for ${vcek.product} (the VCEK's product ${vcek.productName})` })
  const chain = verifyChain(vcek.certificate, pair.store, now, [pair.ask])
  if (Either.isLeft(chain)) return Either.left({ reason: `${vcek.product} chain ARK → ASK → VCEK: ${chain.left.message}` })
  const windows = chain.right.path.map(validity)
  return Either.right({
    vcek,
    roots,
    validFrom: Math.max(...windows.map((w) => w.notBefore.getTime())),
    validUntil: Math.min(...windows.map((w) => w.notAfter.getTime()))
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
