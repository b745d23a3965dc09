import { NodeContext } from "@effect/platform-node"
import { describe } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { Tpm2Tools } from "../../../src/tpm/tpm2tools/Tpm2Tools.js"
import { makeTpm2ToolsTpm } from "../../../src/tpm/tpm2tools/Tpm2ToolsTpm.js"
import { needsSwtpm } from "../../support/requirements.js"
import { SwtpmHarness } from "../../support/swtpm.js"
import { ReopenTpm, tpmContract } from "./contract.js"

const ok = needsSwtpm()

const TpmOnSwtpm = Layer.unwrapEffect(
  Effect.map(SwtpmHarness, (swtpm) =>
    Layer.merge(
      Tpm2Tools.layer({ tcti: swtpm.tcti }),
      Layer.succeed(ReopenTpm, makeTpm2ToolsTpm({ tcti: swtpm.tcti }).pipe(Effect.provide(NodeContext.layer)))
    )
  )
).pipe(Layer.provide(SwtpmHarness.layer()), Layer.provide(NodeContext.layer))

describe.skipIf(!ok)("swtpm", () => {
  tpmContract("Tpm contract: Tpm2Tools on a private swtpm", TpmOnSwtpm)
})
