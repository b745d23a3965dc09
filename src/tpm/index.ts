/**
 * attest/tpm: TPM 2.0 structures and their verification (quotes, certify), and the Tpm port.
 * Portable: imports no Node built-in (crypto comes from the crypto port, src/crypto); the Node-only
 * parts (MakeCredential, EK certificates, the simulator, the tpm2-tools layer) are attest/tpm/node.
 */

// --- the port ---------------------------------------------------------------------------------
export * from "./Tpm.js"

// --- TPM 2.0 structures and crypto (pure functions) ----------------------------------------------
export * from "./constants.js"
export * from "./errors.js"
export * from "./bytes.js"
export { hashAlgs, algIdOf, hashAlgFromId, digestSize, hashAlgFromName } from "./hashAlg.js"
export * from "./public.js"
export * from "./pcrSelection.js"
export * from "./pcrBlob.js"
export * from "./attest.js"
export * from "./signature.js"
export * from "./quoteString.js"
export * from "./akCache.js"
export * from "./verifyQuote.js"
export * from "./verifyCertify.js"
export * from "./kdf.js"
