/**
 * `attest ca revoke`: takes an administrator's certificate back by adding its serial to the CA
 * directory's CRL (spec §5.3: a revoked admin certificate is refused). Earlier entries are kept,
 * the CRL number goes up by one, the files are replaced atomically.
 */
import * as path from "node:path"
import { Clock, Effect, Either } from "effect"
import { CA_FILES, certFile, loadCa, writeCrl } from "./ca.js"
import { type Crl, loadVerifiedCrl, normalizeSerial, type RevokedEntry } from "./crl.js"
import { CaError, exists, readBytes } from "./files.js"
import { parseCertificate, parseCertificates } from "./parse.js"

export type RevokeTarget = { readonly name: string } | { readonly serial: string }

export interface RevokeResult {
  readonly serial: string
  readonly crlPath: string
  /** False when the serial was already listed (the CRL is then left as it is). */
  readonly added: boolean
  readonly crlNumber: bigint
}

/** The CA directory's CRL, verified against its CA; undefined when there is none yet. */
export const loadCaCrl = Effect.fn("Ca.loadCrl")(function*(dir: string, caCertificate: Uint8Array) {
  const crlPath = path.join(dir, CA_FILES.crl)
  if (!(yield* exists(crlPath))) return undefined
  const bytes = yield* readBytes(crlPath)
  return yield* Either.mapLeft(
    loadVerifiedCrl(bytes, caCertificate),
    (e) => new CaError({ message: `${crlPath}: ${e.reason}`, file: crlPath })
  )
})

const serialOfNamed = Effect.fn("Ca.serialOf")(function*(dir: string, name: string, caCertificate: Uint8Array) {
  const file = path.join(dir, certFile(name))
  if (!(yield* exists(file))) {
    return yield* new CaError({ message: `no certificate for administrator '${name}' (${file} does not exist)`, file })
  }
  const parsed = parseCertificates(yield* readBytes(file))
  if (Either.isLeft(parsed)) return yield* new CaError({ message: `${file}: ${parsed.left.reason}`, file })
  const x = parsed.right[0]!
  const ca = yield* Either.mapLeft(parseCertificate(caCertificate), (e) => new CaError({ message: e.reason, file: dir }))
  // Only a certificate this CA issued can be revoked by this CA's CRL.
  if (!x.checkIssued(ca) || !x.verify(ca.publicKey)) {
    return yield* new CaError({ message: `${file} was not issued by the CA in ${dir}`, file })
  }
  return normalizeSerial(x.serialNumber)
})

export const revokeAdmin = Effect.fn("Ca.revokeAdmin")(function*(o: { readonly dir: string } & RevokeTarget) {
  const ca = yield* loadCa(o.dir)
  const serial = "name" in o
    ? yield* serialOfNamed(o.dir, o.name, ca.certificate)
    : normalizeSerial(o.serial)
  if (!/^[0-9A-F]+$/.test(serial) || serial === "0") {
    return yield* new CaError({ message: `serial '${"serial" in o ? o.serial : serial}' is not a positive hexadecimal number` })
  }
  const caX = yield* Either.mapLeft(parseCertificate(ca.certificate), (e) => new CaError({ message: e.reason, file: o.dir }))
  if (normalizeSerial(caX.serialNumber) === serial) {
    return yield* new CaError({ message: `serial ${serial} is the CA certificate itself; a CA cannot revoke itself` })
  }
  const existing: Crl | undefined = yield* loadCaCrl(o.dir, ca.certificate)
  const crlPath = path.join(o.dir, CA_FILES.crl)
  const previous: ReadonlyArray<RevokedEntry> = existing?.revoked ?? []
  if (previous.some((r) => r.serial === serial)) {
    return { serial, crlPath, added: false, crlNumber: existing?.crlNumber ?? 0n } satisfies RevokeResult
  }
  const crlNumber = (existing?.crlNumber ?? 0n) + 1n
  const revokedAt = new Date(yield* Clock.currentTimeMillis)
  yield* writeCrl(ca, [...previous, { serial, revokedAt }], crlNumber)
  return { serial, crlPath, added: true, crlNumber } satisfies RevokeResult
})
