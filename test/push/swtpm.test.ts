/**
 * A push agent on swtpm (the tpm2-tools layer: TPM2_Certify for the PoP session, TPM2_Quote over
 * the challenge) with a simulated machine's measurements extended into swtpm, against the verifier
 * on SQLite and PostgreSQL: its attestations pass; a file outside the policy makes the next one
 * fail with policy_violation.
 */
import { NodeContext, NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { join } from "node:path"
import { Tpm2Tools } from "../../src/tpm/tpm2tools/Tpm2Tools.js"
import { layer as machineLayer, SimulatedMachine } from "../../src/agent/measurements/SimulatedMachine.js"
import { runPushAgent } from "../../src/push-agent/PushAgent.js"
import { tempDir } from "../agent/support.js"
import { needsSwtpm } from "../support/requirements.js"
import { SwtpmHarness } from "../support/swtpm.js"
import { backends } from "../verifier/support.js"
import { enrolledPushAgent, pushVerifier, verdict } from "./support.js"

const AGENT = "d432fbb3-d2f1-4a97-9ef7-75bd81c000f1"
const swtpmOk = needsSwtpm()

describe.each(backends)("push agent on swtpm, verifier on %s", (backend, available) => {
  it.live.skipIf(!available || !swtpmOk)("attests: pass, then policy_violation after tampering", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("attest-push-swtpm-")
      const options = yield* enrolledPushAgent(AGENT, join(dir, "agent"))
      const first = yield* runPushAgent({ ...options, cycles: 2 }).pipe(Effect.provide(NodeHttpClient.layerUndici))
      expect([first.accepted, first.refused]).toEqual([2, 0])
      expect((yield* verdict(AGENT)).json.data.attributes.evaluation).toEqual("pass")
      yield* Effect.orDie((yield* SimulatedMachine).measure("/usr/bin/evil", "not in the policy"))
      yield* runPushAgent({ ...options, cycles: 1 }).pipe(Effect.provide(NodeHttpClient.layerUndici))
      const last = yield* verdict(AGENT)
      expect([last.json.data.attributes.evaluation, last.json.data.attributes.failure_reason]).toEqual(["fail", "policy_violation"])
    }).pipe(
      Effect.scoped,
      Effect.provide(Layer.merge(
        pushVerifier(backend),
        machineLayer({ name: "push-swtpm", files: [{ path: "/usr/bin/bash", content: "bash" }] }).pipe(
          Layer.provideMerge(Layer.unwrapEffect(Effect.map(SwtpmHarness, (s) => Tpm2Tools.layer({ tcti: s.tcti }).pipe(Layer.provide(NodeContext.layer))))),
          Layer.provide(SwtpmHarness.layer())
        )
      )),
      Effect.orDie
    ), 240_000)
})
