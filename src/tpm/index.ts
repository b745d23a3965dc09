/** attest/tpm: TPM 2.0 structures, verification and the Tpm port. */

// --- the port ---------------------------------------------------------------------------------
export * from "./Tpm.js"

// --- TPM 2.0 structures and crypto (pure functions) ----------------------------------------------
export * from "./constants.js"
export * from "./errors.js"
export * from "./bytes.js"
export { hashAlgs, algIdOf, hashAlgFromId, digestSize, hashAlgFromName } from "./hashAlg.js"
export * from "./public.js"
export * from "./templates.js"
export * from "./pcrSelection.js"
export * from "./pcrBlob.js"
export * from "./attest.js"
export * from "./signature.js"
export * from "./quoteString.js"
export * from "./akCache.js"
export * from "./verifyQuote.js"
export * from "./verifyCertify.js"
export * from "./kdf.js"
export {
  makeCredential,
  activateCredentialWithKey,
  encodeCredentialFile,
  decodeCredentialFile,
  encodeCredentialParts,
  type Rng
} from "./credential.js"
export * from "./ekCertificate.js"

// --- TpmSimulator layer (src/tpm/simulator/) ----------------------------------------------------
export { TpmSimulator } from "../../layers/TpmSimulator.js"
export { makeSimulator, SIMULATOR_FIRMWARE_VERSION, type TpmSimulatorOptions } from "./simulator/Simulator.js"
export { type ManufacturerCa, SIMULATOR_TPM, simulatorManufacturerCa } from "./simulator/manufacturer.js"

// --- Tpm2Tools layer (layers/Tpm2Tools.ts) ------------------------------------------------------
export { Tpm2Tools } from "../../layers/Tpm2Tools.js"
export { DEFAULT_TCTI, makeTpm2ToolsTpm, type Tpm2ToolsConfig } from "./tpm2tools/Tpm2ToolsTpm.js"
