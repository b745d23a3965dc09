/**
 * attest/crypto: the crypto port the engines verify with. `cryptoPort()` is the one in use (node:crypto
 * where it exists, else @noble/hashes + @noble/curves + WebCrypto), `useCrypto` chooses, and
 * `settleSignatures(f)` runs a synchronous engine call with every signature check answered
 * (needed with the portable port for RSA keys, harmless with node). Portable: imports no Node built-in.
 */
export { cryptoPort, settleSignatures, SignaturesUnsettled, useCrypto } from "./active.js"
export * from "./encoding.js"
export { nodeCryptoPort } from "./node.js"
export * from "./port.js"
export { portableCryptoPort } from "./portable.js"
export { spkiDer, subjectPublicKey } from "./spki.js"
export { type Certificate, mayHaveIssued, readCertificate, signatureSchemeOf } from "./x509.js"
