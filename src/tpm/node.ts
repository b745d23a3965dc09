/**
 * attest/tpm/node: the Node-only parts of the TPM module, on node:crypto: MakeCredential and
 * credential activation, EK certificates, public-area templates and KeyObjects for node keys, the
 * in-memory simulator (TpmSimulator) and the tpm2-tools layer (Tpm2Tools).
 */
export * from "./templates.js"
export * from "./nodeKeys.js"
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
export { TpmSimulator } from "./simulator/TpmSimulator.js"
export { makeSimulator, SIMULATOR_FIRMWARE_VERSION, type TpmSimulatorOptions } from "./simulator/Simulator.js"
export { type ManufacturerCa, SIMULATOR_TPM, simulatorManufacturerCa } from "./simulator/manufacturer.js"

// --- Tpm2Tools layer (src/tpm/tpm2tools/Tpm2Tools.ts) ------------------------------------------------------
export { Tpm2Tools } from "./tpm2tools/Tpm2Tools.js"
export { DEFAULT_TCTI, makeTpm2ToolsTpm, type Tpm2ToolsConfig } from "./tpm2tools/Tpm2ToolsTpm.js"
