/**
 * The simulator's TPM manufacturer: one CA shared by every simulated TPM (its key is derived from a
 * fixed label, so every process and every simulator agrees on it), and EK certificates shaped like
 * a real TPM's (TCG EK Credential Profile): empty subject with a critical subjectAltName
 * directoryName (TPM manufacturer / model / version), EKU 2.23.133.8.1, keyUsage keyEncipherment
 * (RSA) or keyAgreement (ECC), subjectDirectoryAttributes tpmSpecification 2.0 / 0 / 164.
 *
 * Trusting this CA means trusting simulated TPMs: anyone can derive its key. Never trust it in production.
 */
import * as asn1js from "asn1js"
import { createHash, createPublicKey, type KeyObject } from "node:crypto"
import { Either } from "effect"
import { EKU, issueCertificate, tcgDirectoryName, toPem } from "../../pki/certificate.js"
import { deriveRsaKey } from "./derive.js"

export const SIMULATOR_TPM = {
  /** TCG vendor id "ATST" (not a registered TPM vendor). */
  manufacturer: "id:41545354",
  model: "attest-simulator",
  version: "id:00010000"
} as const

const CA_SEED = new TextEncoder().encode("attest simulated TPM manufacturer CA, version 1")
const NOT_BEFORE = new Date(Date.UTC(2020, 0, 1))
const NOT_AFTER = new Date(Date.UTC(9999, 11, 31, 23, 59, 59))

export interface ManufacturerCa {
  readonly certificate: Uint8Array
  readonly pem: string
  readonly privateKey: KeyObject
}

let cached: ManufacturerCa | undefined

/**
 * The simulated TPM manufacturer CA (self-signed, RSA 2048). Give its certificate to a registrar
 * to accept simulated EK certificates. The same in every process.
 */
export const simulatorManufacturerCa = (): ManufacturerCa => {
  if (cached !== undefined) return cached
  const privateKey = deriveRsaKey(CA_SEED, "manufacturer-ca", 2048)
  const certificate = Either.getOrThrowWith(
    issueCertificate({
      subject: { O: "attest simulated TPM (not for production)", CN: "attest simulated TPM manufacturer CA" },
      publicKey: createPublicKey(privateKey),
      signingKey: privateKey,
      serial: 1n,
      notBefore: NOT_BEFORE,
      notAfter: NOT_AFTER,
      basicConstraints: { ca: true, critical: true },
      keyUsage: ["keyCertSign", "cRLSign"]
    }),
    // Fixed inputs: failing here is a programming error, not a runtime condition.
    (e) => new Error(`cannot issue the simulator manufacturer CA: ${e.reason}`)
  )
  cached = { certificate, pem: toPem(certificate), privateKey }
  return cached
}

/** subjectDirectoryAttributes with TPMSpecification { family "2.0", level 0, revision 164 }. */
const tpmSpecification = (): Uint8Array =>
  new Uint8Array(
    new asn1js.Sequence({
      value: [
        new asn1js.Sequence({
          value: [
            new asn1js.ObjectIdentifier({ value: "2.23.133.2.16" }),
            new asn1js.Set({
              value: [
                new asn1js.Sequence({
                  value: [
                    new asn1js.Utf8String({ value: "2.0" }),
                    new asn1js.Integer({ value: 0 }),
                    new asn1js.Integer({ value: 164 })
                  ]
                })
              ]
            })
          ]
        })
      ]
    }).toBER(false)
  )

/** An EK certificate from the simulator manufacturer CA; the serial is derived from the key. */
export const issueEkCertificate = (ekPublicKey: KeyObject): Either.Either<Uint8Array, string> => {
  const ca = simulatorManufacturerCa()
  const spki = ekPublicKey.export({ format: "der", type: "spki" })
  const serial = BigInt("0x" + createHash("sha256").update(spki).digest("hex").slice(0, 16)) | 1n
  const rsa = ekPublicKey.asymmetricKeyType === "rsa"
  return Either.mapLeft(
    issueCertificate({
      subject: {},
      publicKey: ekPublicKey,
      issuer: { certificate: ca.certificate, privateKey: ca.privateKey },
      serial,
      notBefore: NOT_BEFORE,
      notAfter: NOT_AFTER,
      basicConstraints: { ca: false, critical: true },
      keyUsage: [rsa ? "keyEncipherment" : "keyAgreement"],
      extendedKeyUsage: [EKU.tcgEkCertificate],
      subjectAltName: { directoryName: tcgDirectoryName(SIMULATOR_TPM), critical: true },
      subjectKeyIdentifier: false,
      extensions: [{ oid: "2.5.29.9", value: tpmSpecification() }]
    }),
    (e) => `cannot issue the EK certificate: ${e.reason}`
  )
}
