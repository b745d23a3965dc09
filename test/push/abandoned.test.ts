/**
 * An attestation left awaiting evidence (its agent died between phase 1 and phase 2, after a
 * restart without a reboot it attests again), on SQLite and PostgreSQL: the next creation is
 * accepted at once and continues the IMA list where the last *passed* attestation of this boot
 * left it (push-model.md, `_determine_ima_offset`), not from entry 0; two left in a row change
 * nothing; the left ones are never judged. The processes and the swtpm: test/faults/pushBetweenRequests.test.ts.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { backends } from "../verifier/support.js"
import { attestOnce, createAttestation, enrol, openSession, pushVerifier, SimAgent, simulatedAgent, verdict } from "./support.js"

const AGENT = "d432fbb3-d2f1-4a97-9ef7-75bd81c0ab01"
const offsetOf = (created: { readonly json: any }) => created.json.data.attributes.evidence_requested[1].chosen_parameters.starting_offset

describe.each(backends)("a push attestation left awaiting evidence on %s", (backend, available) => {
  it.live.skipIf(!available)("the next one continues the IMA list from the passed one before it", () =>
    Effect.gen(function*() {
      yield* enrol(AGENT)
      const sim = yield* SimAgent
      const token = (yield* openSession(AGENT)).token!
      const first = yield* attestOnce(AGENT, token)
      expect([offsetOf(first.created), first.submitted?.status, (yield* verdict(AGENT)).json.data.attributes.evaluation]).toEqual([0, 202, "pass"])
      const entries = yield* sim.machine.entries

      // past the interval after that verdict's evidence (premature_attestation otherwise); the agent dies after phase 1, twice: each creation accepted at once (nothing judged, no interval to wait)
      yield* Effect.sleep("1100 millis")
      const left = [yield* createAttestation(AGENT, token), yield* createAttestation(AGENT, token)]
      expect(left.map((c) => [c.status, offsetOf(c)])).toEqual([[201, entries], [201, entries]])

      // back (same boot), with a file measured meanwhile: only the entries after the passed attestation's
      yield* Effect.orDie(sim.machine.measure("/usr/bin/bash", "GNU bash 5.2"))
      const next = yield* attestOnce(AGENT, token)
      expect([next.created.status, offsetOf(next.created), next.submitted?.status]).toEqual([201, entries, 202])
      const judged = yield* verdict(AGENT)
      expect([String(judged.json.data.id), judged.json.data.attributes.evaluation]).toEqual(["3", "pass"])
    }).pipe(Effect.provide(Layer.merge(pushVerifier(backend), simulatedAgent("push-abandoned")))), 120_000)
})
