/**
 * Is a TLS peer an administrator? (spec §5.3): its client certificate chains to
 * `trusted_client_ca`, is not expired, is not revoked (when the trusted CAs' CRLs are given), and
 * carries the Client Authentication EKU. Pure, so the
 * HTTP layer can call it per request with the time from `Clock`.
 */
import type * as crypto from "node:crypto"
import { Either } from "effect"
import { EKU } from "./certificate.js"
import { normalizeSerial, type RevocationList } from "./crl.js"
import { certificateFields } from "../crypto/der.js"
import { type TrustStore, verifyChain } from "./chain.js"
import { parseCertificate, validity } from "./parse.js"

export interface Admin {
  /** The certificate's CN (e.g. `client`), else its whole subject. */
  readonly identity: string
  readonly certificate: crypto.X509Certificate
  /**
   * When the verdict holds, as far as time goes: the latest notBefore and the earliest notAfter of
   * the chain to the trust anchor (a caller may keep the verdict within it while the trust store
   * and the CRL in force stay the same).
   */
  readonly validFrom: Date
  readonly validUntil: Date
}

export type NotAdminReason = "no-certificate" | "malformed" | "untrusted" | "expired" | "revoked" | "no-client-auth-eku"

export interface NotAdmin {
  readonly reason: NotAdminReason
  readonly message: string
  /** Set for `revoked`: the serial (hex) and subject, for the log line. */
  readonly serial?: string
  readonly subject?: string
}

export const cnOf = (x: crypto.X509Certificate): string =>
  x.subject.split("\n").find((l) => l.startsWith("CN="))?.slice(3) ?? x.subject.replace(/\n/g, ", ")

/**
 * What every certificate a peer presents to a server of attest must be (an admin's, a cluster
 * runner's): it chains to `trustedCas`, is valid at `now` and is not revoked (when the trusted CAs'
 * CRLs are given). The usage (EKU) is the caller's check.
 */
export const trustedPeerCertificate = (
  peerCertDer: Uint8Array | undefined,
  trustedCas: TrustStore,
  now: Date,
  /** Parsed, verified CRLs of the trusted CAs; without it revocation is not checked. */
  revocations?: RevocationList
): Either.Either<crypto.X509Certificate, NotAdmin> => {
  if (peerCertDer === undefined || peerCertDer.length === 0) {
    return Either.left({ reason: "no-certificate", message: "no client certificate was presented" })
  }
  const parsed = parseCertificate(peerCertDer)
  if (Either.isLeft(parsed)) return Either.left({ reason: "malformed", message: parsed.left.reason })
  const x = parsed.right
  const chain = verifyChain(x, trustedCas, now)
  if (Either.isLeft(chain)) {
    const e = chain.left
    return Either.left({
      reason: e.kind === "expired" || e.kind === "not-yet-valid" ? "expired" : "untrusted",
      message: e.message
    })
  }
  if (revocations !== undefined) {
    const fields = certificateFields(peerCertDer)
    if (Either.isLeft(fields)) return Either.left({ reason: "malformed", message: fields.left.reason })
    const listed = revocations.byIssuer.get(Buffer.from(fields.right.issuer).toString("hex"))
    const serial = normalizeSerial(x.serialNumber)
    if (listed?.has(serial)) {
      return Either.left({
        reason: "revoked",
        message: `client certificate ${cnOf(x)} (serial ${serial}) is revoked by its CA's CRL`,
        serial,
        subject: x.subject.replace(/\n/g, ", ")
      })
    }
  }
  return Either.right(x)
}

/**
 * When the chain of a certificate that chained at `now` is valid: the latest notBefore and the
 * earliest notAfter along its path (a verdict kept per connection holds only inside it).
 */
const validityWindow = (x: crypto.X509Certificate, trustedCas: TrustStore, now: Date): { validFrom: Date; validUntil: Date } => {
  let validFrom = -Infinity
  let validUntil = Infinity
  const chain = verifyChain(x, trustedCas, now)
  for (const c of Either.isRight(chain) ? chain.right.path : []) {
    const v = validity(c)
    validFrom = Math.max(validFrom, v.notBefore.getTime())
    validUntil = Math.min(validUntil, v.notAfter.getTime())
  }
  return { validFrom: new Date(validFrom), validUntil: new Date(validUntil) }
}

/** Does the certificate carry this extended key usage (node reports the EKU OIDs as keyUsage; undefined when the extension is absent)? */
export const hasExtendedKeyUsage = (x: crypto.X509Certificate, oid: string): boolean => (x.keyUsage ?? []).includes(oid)

export const isAdminCertificate = (
  peerCertDer: Uint8Array | undefined,
  trustedCas: TrustStore,
  now: Date,
  /** Parsed, verified CRLs of the trusted CAs; without it revocation is not checked. */
  revocations?: RevocationList
): Either.Either<Admin, NotAdmin> =>
  Either.flatMap(trustedPeerCertificate(peerCertDer, trustedCas, now, revocations), (x) =>
    hasExtendedKeyUsage(x, EKU.clientAuth)
      ? Either.right({ identity: cnOf(x), certificate: x, ...validityWindow(x, trustedCas, now) })
      : Either.left({
        reason: "no-client-auth-eku",
        message: `client certificate ${cnOf(x)} lacks the Client Authentication extended key usage`
      }))
