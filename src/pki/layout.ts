/**
 * Names and defaults of the server components CA directory (Keylime's `cv_ca` layout), apart from
 * the code that creates it, so the CLI can show them in --help without loading the PKI code.
 */

export const DEFAULT_CA_DIR = "/var/lib/attest/cv_ca"

export const CA_FILES = {
  caCert: "cacert.crt",
  caKey: "ca-private.pem",
  caPublic: "ca-public.pem",
  serverCert: "server-cert.crt",
  serverKey: "server-private.pem",
  clientCert: "client-cert.crt",
  clientKey: "client-private.pem",
  /** Keylime's CA tool keeps the CRL in both encodings; attest reads the DER one. */
  crl: "cacrl.der",
  crlPem: "cacrl.pem"
} as const

export const certFile = (name: string) => `${name}-cert.crt`
export const keyFile = (name: string) => `${name}-private.pem`
export const publicFile = (name: string) => `${name}-public.pem`

/** Keylime's defaults: `cert_ca_lifetime = 3650`, `cert_lifetime = 365` days. */
export const CA_DAYS = 3650
export const CERT_DAYS = 365
