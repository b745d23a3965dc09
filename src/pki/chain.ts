/**
 * Certificate chain validation against a trust store directory (EK certificates from TPM
 * manufacturers, admin client certificates). A walk with node's `X509Certificate`:
 * `checkIssued` (names, AKI/SKI, issuer key usage) picks the issuer, `verify` checks the signature.
 * Extensions are not interpreted beyond basic constraints, so TCG quirks (critical directoryName
 * SAN, EKU 2.23.133.8.1, unknown non-critical extensions) pass.
 */
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { Clock, Data, Effect, Either } from "effect"
import { pathLenConstraint } from "../crypto/der.js"
import { parseCertificate, parseCertificates, validity } from "./parse.js"

export type ChainFailure =
  | "malformed"
  | "untrusted-issuer"
  | "expired"
  | "not-yet-valid"
  | "bad-signature"
  | "issuer-not-ca"
  | "path-too-long"

/** Why a certificate does not chain to the trust store; `message` is fit for an operator. */
export class ChainError extends Data.TaggedError("ChainError")<{
  readonly kind: ChainFailure
  /** Subject of the certificate where validation stopped. */
  readonly subject: string
  readonly message: string
}> {}

export class TrustStoreError extends Data.TaggedError("TrustStoreError")<{
  readonly dir: string
  readonly message: string
  readonly cause?: unknown
}> {}

export interface TrustedCertificate {
  readonly certificate: crypto.X509Certificate
  /** File it came from (for messages and `attest ca list`). */
  readonly file: string
}

export interface TrustStore {
  readonly dir: string
  readonly anchors: ReadonlyArray<TrustedCertificate>
  /** Files that hold no certificate (a README, a key): listed, not fatal. */
  readonly skipped: ReadonlyArray<{ readonly file: string; readonly reason: string }>
}

export const emptyTrustStore = (dir = "(none)"): TrustStore => ({ dir, anchors: [], skipped: [] })

/** A trust store from certificates already in memory (tests, `trusted_client_ca` PEM text). */
export const trustStoreOf = (certificates: ReadonlyArray<crypto.X509Certificate>, dir = "(memory)"): TrustStore => ({
  dir,
  anchors: certificates.map((certificate) => ({ certificate, file: dir })),
  skipped: []
})

/** Every CERTIFICATE block of PEM text (a bundle is fine) as a trust store, or why it is not one. */
export const trustStoreFromPem = (pem: string, label = "trusted_client_ca"): Either.Either<TrustStore, string> => {
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? []
  if (blocks.length === 0) return Either.left(`${label} holds no PEM certificate`)
  return Either.map(
    Either.all(blocks.map((b) => Either.try({ try: () => new crypto.X509Certificate(b), catch: () => `${label}: unreadable certificate` }))),
    (certs) => trustStoreOf(certs, label)
  )
}

/** Every certificate of every regular file in `dir` (PEM with several blocks, or DER). */
export const loadTrustStore = (dir: string): Effect.Effect<TrustStore, TrustStoreError> =>
  Effect.try({
    try: () => {
      const anchors: Array<TrustedCertificate> = []
      const skipped: Array<{ file: string; reason: string }> = []
      for (const name of fs.readdirSync(dir).sort()) {
        const file = path.join(dir, name)
        if (!fs.statSync(file).isFile()) continue
        const parsed = parseCertificates(new Uint8Array(fs.readFileSync(file)))
        if (Either.isLeft(parsed)) skipped.push({ file, reason: parsed.left.reason })
        else for (const certificate of parsed.right) anchors.push({ certificate, file })
      }
      return { dir, anchors, skipped }
    },
    catch: (cause) => new TrustStoreError({ dir, message: `cannot read trust store ${dir}: ${(cause as Error)?.message ?? cause}`, cause })
  }).pipe(Effect.withSpan("pki.loadTrustStore", { attributes: { dir } }))

/** Trust store from one file or a directory (`trusted_client_ca` may name either). */
export const loadTrustStorePath = (p: string): Effect.Effect<TrustStore, TrustStoreError> =>
  Effect.suspend(() => {
    let isDir: boolean
    try {
      isDir = fs.statSync(p).isDirectory()
    } catch (cause) {
      return Effect.fail(new TrustStoreError({ dir: p, message: `cannot read trust store ${p}: ${(cause as Error)?.message}`, cause }))
    }
    if (isDir) return loadTrustStore(p)
    return Effect.try({
      try: () => fs.readFileSync(p),
      catch: (cause) => new TrustStoreError({ dir: p, message: `cannot read ${p}`, cause })
    }).pipe(
      Effect.flatMap((bytes) => {
        const parsed = parseCertificates(new Uint8Array(bytes))
        return Either.isLeft(parsed)
          ? Effect.fail(new TrustStoreError({ dir: p, message: `${p}: ${parsed.left.reason}` }))
          : Effect.succeed(trustStoreOf(parsed.right, p))
      })
    )
  })

export interface ValidChain {
  /** Leaf first, trust anchor last. */
  readonly path: ReadonlyArray<crypto.X509Certificate>
  readonly anchorFile: string
}

const MAX_DEPTH = 8

// Trust-store certificates are long-lived objects: read their pathLen once.
const pathLenCache = new WeakMap<crypto.X509Certificate, number | undefined>()
const pathLenOf = (x: crypto.X509Certificate): number | undefined => {
  if (pathLenCache.has(x)) return pathLenCache.get(x)
  // node has parsed the certificate already; an unreadable pathLen is treated as absent
  const p = Either.getOrUndefined(pathLenConstraint(new Uint8Array(x.raw)))
  pathLenCache.set(x, p)
  return p
}

// node gives `undefined`, not "", for an empty subject (TCG EK certificates have one).
const subjectOf = (x: crypto.X509Certificate): string => (x.subject ?? "").replace(/\n/g, ", ") || "(empty subject)"
const issuerOf = (x: crypto.X509Certificate): string => (x.issuer ?? "").replace(/\n/g, ", ") || "(empty issuer)"

const checkTime = (x: crypto.X509Certificate, now: Date): ChainError | undefined => {
  const { notAfter, notBefore } = validity(x)
  if (now.getTime() > notAfter.getTime()) {
    return new ChainError({ kind: "expired", subject: subjectOf(x), message: `certificate ${subjectOf(x)} expired at ${notAfter.toISOString()}` })
  }
  if (now.getTime() < notBefore.getTime()) {
    return new ChainError({ kind: "not-yet-valid", subject: subjectOf(x), message: `certificate ${subjectOf(x)} is not valid before ${notBefore.toISOString()}` })
  }
  return undefined
}

const signedBy = (x: crypto.X509Certificate, issuer: crypto.X509Certificate): boolean => {
  try {
    return x.verify(issuer.publicKey)
  } catch {
    return false
  }
}

/**
 * Pure chain walk from `leaf` to any certificate of `store` (every certificate in the store is a
 * trust anchor, so a store may hold roots, intermediates or both). `intermediates` are untrusted
 * helpers sent alongside the leaf.
 */
export const verifyChain = (
  leaf: crypto.X509Certificate,
  store: TrustStore,
  now: Date,
  intermediates: ReadonlyArray<crypto.X509Certificate> = []
): Either.Either<ValidChain, ChainError> => {
  const chain: Array<crypto.X509Certificate> = [leaf]
  let current = leaf
  for (let depth = 0; depth < MAX_DEPTH; depth++) {
    const timeError = checkTime(current, now)
    if (timeError) return Either.left(timeError)
    const anchorSelf = store.anchors.find((a) => a.certificate.raw.equals(current.raw))
    if (anchorSelf) return Either.right({ path: chain, anchorFile: anchorSelf.file })

    const fromStore = store.anchors.filter((a) => current.checkIssued(a.certificate)).map((a) => a.certificate)
    const helpers = intermediates.filter((c) => !c.raw.equals(current.raw) && current.checkIssued(c))
    const candidates = [...fromStore, ...helpers]
    if (candidates.length === 0) {
      return Either.left(new ChainError({
        kind: "untrusted-issuer",
        subject: subjectOf(current),
        message: `certificate ${subjectOf(current)} is issued by ${issuerOf(current)}, which is not in the trust store ${store.dir}`
      }))
    }
    const issuer = candidates.find((c) => signedBy(current, c))
    if (issuer === undefined) {
      return Either.left(new ChainError({
        kind: "bad-signature",
        subject: subjectOf(current),
        message: `signature of certificate ${subjectOf(current)} does not verify with the key of its issuer ${issuerOf(current)}`
      }))
    }
    if (!issuer.ca) {
      return Either.left(new ChainError({
        kind: "issuer-not-ca",
        subject: subjectOf(issuer),
        message: `issuer ${subjectOf(issuer)} is not a CA (basicConstraints cA is not set)`
      }))
    }
    const pathLen = pathLenOf(issuer)
    const casBelow = chain.length - 1 // intermediates between this issuer and the leaf
    if (pathLen !== undefined && casBelow > pathLen) {
      return Either.left(new ChainError({
        kind: "path-too-long",
        subject: subjectOf(issuer),
        message: `issuer ${subjectOf(issuer)} allows ${pathLen} intermediate CA(s) below it, the chain has ${casBelow}`
      }))
    }
    chain.push(issuer)
    current = issuer
  }
  return Either.left(new ChainError({ kind: "path-too-long", subject: subjectOf(current), message: `chain longer than ${MAX_DEPTH} certificates` }))
}

/** DER leaf (TPM NV padding tolerated) + optional intermediates, validated at `Clock` time. */
export const validateChain = (
  leafDer: Uint8Array,
  store: TrustStore,
  intermediates: ReadonlyArray<crypto.X509Certificate> = []
): Effect.Effect<ValidChain, ChainError> =>
  Effect.gen(function*() {
    const leaf = parseCertificate(leafDer)
    if (Either.isLeft(leaf)) {
      return yield* Effect.fail(new ChainError({ kind: "malformed", subject: "(unparsed)", message: leaf.left.reason }))
    }
    const now = new Date(yield* Clock.currentTimeMillis)
    return yield* verifyChain(leaf.right, store, now, intermediates)
  })
