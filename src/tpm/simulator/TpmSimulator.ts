/**
 * `Tpm` as an in-memory simulator: `TpmSimulator.layer({ seed?, stateFile?, banks? })`.
 * Real crypto and byte-exact TPM structures; see src/tpm/simulator/Simulator.ts. The state file
 * (if any) is written on start, after each new AK and when the layer is released.
 */
import { NodeFileSystem } from "@effect/platform-node"
import { Layer } from "effect"
import { makeSimulator, type TpmSimulatorOptions } from "./Simulator.js"
import { Tpm, type TpmError } from "../Tpm.js"

export type { TpmSimulatorOptions } from "./Simulator.js"
export { simulatorManufacturerCa } from "./manufacturer.js"

export const TpmSimulator = {
  layer: (options: TpmSimulatorOptions = {}): Layer.Layer<Tpm, TpmError> =>
    Layer.scoped(Tpm, makeSimulator(options)).pipe(Layer.provide(NodeFileSystem.layer))
} as const
