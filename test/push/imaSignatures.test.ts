/**
 * A push agent's IMA file signatures are checked against the tenant's `ima_sign_verification_keys`
 * (issue 23 §1: the push verdict never read them, so a file signed with the tenant's key and
 * absent from the runtime policy failed for push where it passes for pull). Over HTTPS with a
 * simulated TPM and machine, on SQLite and PostgreSQL: the machine runs a file signed by evmctl
 * (the vector hello.sh and its signature) that its runtime policy does not list.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { readVector, readVectorText } from "../support/vectors.js"
import { backends } from "../verifier/support.js"
import { attestOnce, enrol, openSession, pushVerifier, SimAgent, simulatedAgent, verdict } from "./support.js"

const AGENT = "d432fbb3-d2f1-4a97-9ef7-75bd81c00023"
const tenantKeys = JSON.stringify({ meta: { version: 1 }, keyids: [], pubkeys: [readVectorText("tpm", "ima", "ima_cert.pem")] })

describe.each(backends)("push IMA signatures on %s", (backend, available) => {
  it.live.skipIf(!available)("a file signed with the tenant's key passes; a signature the key does not verify fails", () =>
    Effect.gen(function*() {
      yield* enrol(AGENT, { ima_sign_verification_keys: tenantKeys })
      const sim = yield* SimAgent
      // after enrolment: the runtime policy (the machine's list at enrolment) does not list it
      yield* Effect.orDie(sim.machine.measure("/usr/local/bin/hello.sh", readVector("tpm", "ima", "files", "hello.sh"), readVector("tpm", "ima", "files", "hello.sh.sig")))
      const token = (yield* openSession(AGENT)).token!

      const first = yield* attestOnce(AGENT, token)
      expect(first.submitted?.status).toEqual(202)
      const passed = (yield* verdict(AGENT)).json.data.attributes
      expect([passed.stage, passed.evaluation, passed.failure_reason]).toEqual(["verification_complete", "pass", null])

      // hello.sh's signature on another file: the key does not verify it, and the policy lacks the file
      yield* Effect.orDie(sim.machine.measure("/usr/local/bin/other.sh", "another script", readVector("tpm", "ima", "files", "hello.sh.sig")))
      yield* Effect.sleep("1100 millis")
      const second = yield* attestOnce(AGENT, token)
      expect(second.submitted?.status).toEqual(202)
      const failed = (yield* verdict(AGENT)).json.data.attributes
      expect([failed.evaluation, failed.failure_reason]).toEqual(["fail", "policy_violation"])
    }).pipe(Effect.provide(Layer.merge(pushVerifier(backend), simulatedAgent("push-ima-sig")))), 120_000)
})
