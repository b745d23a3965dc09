/**
 * Phase 2 on what phase 1 handed over in this process: the handoff is taken once, only for the
 * index phase 1 created and before its challenge expires; and the store still decides. Here a
 * second verifier process (a second domain on the same database) creates a newer attestation
 * between the first process's phase 1 and phase 2: the first process must not accept evidence for
 * an attestation that is no longer the latest, and answers as if it had read the store.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Layer, Option } from "effect"
import { capabilitiesOf, collectEvidence } from "../../src/push-agent/evidence.js"
import { Attestations } from "../../src/verifier/push/Attestations.js"
import { makeHandoffs } from "../../src/verifier/push/handoff.js"
import { PushRepo } from "../../src/verifier/domain/pushStore/repo.js"
import type { LatestAttestation } from "../../src/verifier/domain/pushStore/rows.js"
import { PushDomainLive } from "../../src/verifier/push/PushDomain.js"
import { initialEvaluationState } from "../../src/attestation/evaluate/state.js"
import type { DatabaseOptions } from "../../src/db/Sql.js"
import { testDatabase } from "../support/db.js"
import { verifierLayer } from "../verifier/support.js"
import { enrol, SimAgent, simulatedAgent } from "./support.js"

const AGENT = "d432fbb3-d2f1-4a97-9ef7-75bd81c0a0a0"
const domain = (db: DatabaseOptions) => PushDomainLive.pipe(Layer.provideMerge(verifierLayer(db, { quote_interval: 2 })))

describe("phase 1 to phase 2 handoff", () => {
  it("is taken once, for its own index, before its challenge expires; the oldest goes first when full", () => {
    const handoffs = makeHandoffs(2)
    const latest = (idx: number) => ({ idx, challenges_expire_at: 1000 }) as LatestAttestation
    const handoff = (idx: number) => ({ latest: latest(idx), agent: {} as never, prior: initialEvaluationState, priorEncoded: null })
    handoffs.put("a", handoff(3))
    expect(handoffs.take("a", 4, 0)).toEqual(undefined)
    expect(handoffs.take("a", 3, 0)).toEqual(undefined) // a mismatch consumed it: phase 2 reads the store
    handoffs.put("a", handoff(3))
    expect(handoffs.take("a", "latest", 999)?.latest.idx).toEqual(3)
    expect(handoffs.take("a", "latest", 999)).toEqual(undefined)
    handoffs.put("a", handoff(5))
    expect(handoffs.take("a", 5, 1000)).toEqual(undefined) // the challenge expired
    handoffs.put("a", handoff(1))
    handoffs.put("b", handoff(1))
    handoffs.put("c", handoff(1))
    expect([handoffs.size(), handoffs.take("a", 1, 0), handoffs.take("c", 1, 0)?.latest.idx]).toEqual([2, undefined, 1])
  })

  it.scoped("a newer attestation created by another process is not overtaken by the first one's handoff", () =>
    Effect.gen(function*() {
      const db = yield* testDatabase("sqlite")
      const sim = yield* SimAgent
      const first = yield* Layer.build(domain(db))
      const second = yield* Layer.build(domain(db))
      const onFirst = Effect.provide(first)
      yield* enrol(AGENT).pipe(onFirst)
      const caps = yield* Effect.orDie(capabilitiesOf(sim.id, sim.source))
      const created = yield* Effect.flatMap(Attestations, (a) => a.create(AGENT, caps)).pipe(onFirst)
      const newer = yield* Effect.flatMap(Attestations, (a) => a.create(AGENT, caps)).pipe(Effect.provide(second))
      expect([created.idx, newer.idx]).toEqual([0, 1])
      const evidence = yield* Effect.orDie(collectEvidence(sim.tpm, sim.id, sim.source, JSON.parse(created.evidence_requested)))
      const refused = yield* Effect.either(Effect.flatMap(Attestations, (a) => a.submit(AGENT, 0, evidence)).pipe(onFirst))
      expect(Either.isLeft(refused) ? refused.left._tag : "accepted").toEqual("OldAttestation")
      const stages = yield* Effect.flatMap(PushRepo, (r) => r.listAttestations(AGENT)).pipe(onFirst)
      expect(stages.map((s) => [s.idx, s.stage, s.evidence])).toEqual([[0, "awaiting_evidence", null], [1, "awaiting_evidence", null]])
      // the agent's own phase 2 of the newer one is accepted through the store on the first process
      const fresh = yield* Effect.orDie(collectEvidence(sim.tpm, sim.id, sim.source, JSON.parse(newer.evidence_requested)))
      const accepted = yield* Effect.flatMap(Attestations, (a) => Effect.zipLeft(a.submit(AGENT, "latest", fresh), a.idle)).pipe(onFirst)
      expect(accepted.row.idx).toEqual(1)
      const judged = yield* Effect.flatMap(PushRepo, (r) => r.findAttestation(AGENT, 1)).pipe(onFirst)
      expect(Option.map(judged, (j) => [j.stage, j.evaluation])).toEqual(Option.some(["verification_complete", "pass"]))
    }).pipe(Effect.provide(simulatedAgent("push-handoff"))), 120_000)
})
