/**
 * The one TLS policy of attest's servers and clients (issue 8): TLS 1.3, or TLS 1.2 with an ECDHE
 * key exchange and an AEAD cipher. Refused: RSA key exchange (no forward secrecy), CBC suites
 * (`AES128-SHA`, `AES256-SHA256`, `ECDHE-RSA-AES128-SHA`, …), SHA-1 MACs, DHE. Every HTTPS
 * listener (registrar, agent, verifier) and every HTTPS client (verifier → agent, tenant) spreads
 * these options into node's `tls`/`https` options:
 *
 *   https.createServer({ key, cert, ...serverTlsPolicy })
 *   new https.Agent({ ca, cert, key, ...clientTlsPolicy })
 *
 * Keylime's Python components and rust-keylime negotiate TLS 1.3 (or ECDHE-GCM on 1.2) with these.
 */
import type * as tls from "node:tls"

/** TLS 1.3 suites (all AEAD) first, then the TLS 1.2 ECDHE + AEAD suites, strongest first. */
export const TLS_CIPHERS: string = [
  "TLS_AES_256_GCM_SHA384",
  "TLS_CHACHA20_POLY1305_SHA256",
  "TLS_AES_128_GCM_SHA256",
  "ECDHE-ECDSA-AES256-GCM-SHA384",
  "ECDHE-RSA-AES256-GCM-SHA384",
  "ECDHE-ECDSA-CHACHA20-POLY1305",
  "ECDHE-RSA-CHACHA20-POLY1305",
  "ECDHE-ECDSA-AES128-GCM-SHA256",
  "ECDHE-RSA-AES128-GCM-SHA256"
].join(":")

export const TLS_MIN_VERSION: tls.SecureVersion = "TLSv1.2"

/** For `https.createServer` / `tls.createServer`: the server's preference order wins. */
export const serverTlsPolicy = {
  minVersion: TLS_MIN_VERSION,
  ciphers: TLS_CIPHERS,
  honorCipherOrder: true
} as const satisfies tls.TlsOptions

/** For `https.Agent`, `https.request`, `tls.connect` and undici's `connect` options. */
export const clientTlsPolicy = {
  minVersion: TLS_MIN_VERSION,
  ciphers: TLS_CIPHERS
} as const satisfies tls.ConnectionOptions
