/** Reading certificates from bytes: DER (with NV padding tolerated) or PEM with several blocks. */
import * as crypto from "node:crypto"
import { Either } from "effect"
import { PkiError } from "../crypto/pkiError.js"
import { fromPem, isPemText } from "../crypto/pem.js"

/**
 * Length of the outer DER SEQUENCE, so trailing bytes (EK certificates read from TPM NV are often
 * padded) can be cut off. Undefined when the header is not a SEQUENCE or runs past the end.
 */
export const derLength = (b: Uint8Array): number | undefined => {
  if (b.length < 2 || b[0] !== 0x30) return undefined
  const first = b[1]!
  if (first < 0x80) return 2 + first <= b.length ? 2 + first : undefined
  const n = first & 0x7f
  if (n === 0 || n > 4 || 2 + n > b.length) return undefined
  let len = 0
  for (let i = 0; i < n; i++) len = len * 256 + b[2 + i]!
  const total = 2 + n + len
  return total <= b.length ? total : undefined
}

/** One DER certificate, parsed by node (trailing padding after the SEQUENCE is ignored). */
export const parseCertificate = (der: Uint8Array): Either.Either<crypto.X509Certificate, PkiError> => {
  const len = derLength(der)
  if (len === undefined) return Either.left(new PkiError({ reason: "not a DER certificate (no complete outer SEQUENCE)" }))
  return Either.try({
    try: () => new crypto.X509Certificate(der.subarray(0, len)),
    catch: (cause) => new PkiError({ reason: `not a valid X.509 certificate: ${(cause as Error)?.message ?? cause}`, cause })
  })
}

/** Every certificate in a file's bytes: all CERTIFICATE blocks of PEM text, or one DER certificate. */
export const parseCertificates = (bytes: Uint8Array): Either.Either<ReadonlyArray<crypto.X509Certificate>, PkiError> => {
  if (!isPemText(bytes)) return Either.map(parseCertificate(bytes), (c) => [c])
  const blocks = fromPem(Buffer.from(bytes).toString("utf8")).filter((b) => b.label === "CERTIFICATE")
  if (blocks.length === 0) return Either.left(new PkiError({ reason: "PEM text without a CERTIFICATE block" }))
  return Either.all(blocks.map((b) => parseCertificate(b.der)))
}

/** notBefore/notAfter as Dates (node 20 only offers the strings). */
export const validity = (x: crypto.X509Certificate): { notBefore: Date; notAfter: Date } => ({
  notBefore: new Date(x.validFrom),
  notAfter: new Date(x.validTo)
})
