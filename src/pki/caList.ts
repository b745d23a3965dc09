/** What `attest ca list` shows for each certificate file of a CA directory. */
import { Effect, Either } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { EKU } from "./certificate.js"
import { normalizeSerial, type RevocationList } from "./crl.js"
import { certificateFields } from "../crypto/der.js"
import { CaError, listFiles } from "./files.js"
import { parseCertificates, validity } from "./parse.js"

export interface CertificateSummary {
  readonly file: string
  readonly subject: string
  readonly issuer: string
  readonly serial: string
  /** Extended key usages by name (serverAuth, clientAuth, …) or OID. */
  readonly usage: ReadonlyArray<string>
  readonly ca: boolean
  readonly notAfter: Date
  readonly status: "valid" | "expired" | "not yet valid" | "revoked"
}

const EKU_NAMES: Record<string, string> = Object.fromEntries(Object.entries(EKU).map(([k, v]) => [v, k]))

const isRevoked = (x: { readonly raw: Buffer; readonly serialNumber: string }, revocations: RevocationList | undefined) => {
  if (revocations === undefined) return false
  const f = certificateFields(new Uint8Array(x.raw))
  return Either.isRight(f) &&
    (revocations.byIssuer.get(Buffer.from(f.right.issuer).toString("hex"))?.has(normalizeSerial(x.serialNumber)) ?? false)
}

/**
 * Every certificate in `dir` (files holding none, such as keys and the CRL, are left out); those
 * listed in `revocations` (the directory's verified CRL) have status `revoked`.
 */
export const listCertificates = (dir: string, now: Date, revocations?: RevocationList) =>
  Effect.gen(function*() {
    const out: Array<Either.Either<CertificateSummary, { file: string; reason: string }>> = []
    for (const file of yield* listFiles(dir)) {
      const base = path.basename(file)
      if (/private|public/.test(base) && !/\.crt$|\.cer$/.test(base)) continue
      if (/crl\.(der|pem)$/.test(base)) continue
      const bytes = yield* Effect.try({
        try: () => new Uint8Array(fs.readFileSync(file)),
        catch: (cause) => new CaError({ message: `cannot read ${file}: ${String(cause)}`, file })
      })
      const parsed = parseCertificates(bytes)
      if (Either.isLeft(parsed)) {
        if (/\.(crt|cer|pem|der)$/.test(base)) out.push(Either.left({ file, reason: parsed.left.reason }))
        continue
      }
      for (const x of parsed.right) {
        const { notAfter, notBefore } = validity(x)
        out.push(Either.right({
          file,
          subject: x.subject.replace(/\n/g, ", "),
          issuer: x.issuer.replace(/\n/g, ", "),
          serial: x.serialNumber,
          usage: (x.keyUsage ?? []).map((o) => EKU_NAMES[o] ?? o),
          ca: x.ca,
          notAfter,
          status: isRevoked(x, revocations) ? "revoked" : now > notAfter ? "expired" : now < notBefore ? "not yet valid" : "valid"
        }))
      }
    }
    return out
  })
