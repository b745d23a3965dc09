/**
 * A process killed mid-operation on a TPM without a resource manager (swtpm's TCTI, /dev/tpm0)
 * leaves its transient objects loaded; three fill swtpm's slots and every key creation after fails
 * ("out of memory for object contexts"). The tpm2-tools layer of the next process (an agent
 * restarted without a reboot) flushes them before its first operation.
 */
import { NodeContext } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { Tpm } from "../../../src/tpm/Tpm.js"
import { runTool } from "../../../src/tpm/tpm2tools/run.js"
import { Tpm2Tools } from "../../../src/tpm/tpm2tools/Tpm2Tools.js"
import { needsSwtpm } from "../../support/requirements.js"
import { startSwtpm } from "../../support/swtpm.js"

describe.skipIf(!needsSwtpm())("tpm2-tools after a killed process", () => {
  it.live("flushes the transient objects it left before the first operation", () =>
    Effect.gen(function*() {
      const swtpm = yield* Effect.acquireRelease(Effect.promise(() => startSwtpm({ p256EkCert: false })), (t) => Effect.promise(() => t.stop()))
      const transient = Effect.promise(() => swtpm.tool("tpm2_getcap", ["handles-transient"]).then((out) => out.toString().split("\n").filter((l) => l.startsWith("- 0x")).length))
      // what a killed predecessor left: every transient slot taken
      for (let i = 0; i < 3; i++) yield* Effect.promise(() => swtpm.tool("tpm2_createprimary", ["-C", "o", "-G", "ecc", "-c", `left-${i}.ctx`]))
      expect(yield* transient).toEqual(3)
      // what a key creation says then, the TPM's reason in the message (a failed start prints only that)
      const refused = yield* Effect.flip(runTool({ tcti: swtpm.tcti, dir: swtpm.stateDir, operation: "ekPublic" }, "tpm2_createek", ["-c", "ek.ctx", "-G", "rsa", "-u", "ek.pub"]))
      expect(refused.message).toMatch(/^tpm2_createek exited with 1 \(.*out of memory for object contexts\)$/)
      const tpm = yield* Tpm.pipe(Effect.provide(Tpm2Tools.layer({ tcti: swtpm.tcti })), Effect.provide(NodeContext.layer))
      const ek = yield* Effect.either(tpm.ekPublic("rsa"))
      expect({ ek: ek._tag === "Right" ? "made" : ek.left.message, transient: yield* transient }).toEqual({ ek: "made", transient: 0 })
    }).pipe(Effect.scoped, Effect.provide(NodeContext.layer)), 180_000)
})
