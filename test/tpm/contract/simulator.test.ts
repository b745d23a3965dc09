import { NodeFileSystem } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { TpmSimulator } from "../../../src/tpm/simulator/TpmSimulator.js"
import { makeSimulator } from "../../../src/tpm/simulator/Simulator.js"
import { ReopenTpm, tpmContract } from "./contract.js"

const seed = "contract suite seed"

tpmContract(
  "Tpm contract: TpmSimulator",
  Layer.merge(
    TpmSimulator.layer({ seed }),
    Layer.succeed(ReopenTpm, makeSimulator({ seed }).pipe(Effect.provide(NodeFileSystem.layer)))
  )
)
