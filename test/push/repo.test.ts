/**
 * The push tables on SQLite and PostgreSQL: an attestation index is taken once, the attestation
 * context reads the agent, its push row and its latest attestation in one statement, deadlines are
 * stored and expire acceptance, restoring acceptance clears them, deleting the agent removes
 * its push rows, and pruning keeps each agent's latest attestations and anything still pending.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { Agents } from "../../src/verifier/Agents.js"
import { PushRepo } from "../../src/verifier/push/repo.js"
import { testDatabase } from "../support/db.js"
import { backends, validBody, verifierLayer } from "../verifier/support.js"

const AGENT = "d432fbb3-d2f1-4a97-9ef7-75bd81c00000"

describe.each(backends)("push repo on %s", (backend, available) => {
  it.live.skipIf(!available)("indexes, deadlines, acceptance, cascade", () =>
    Effect.gen(function*() {
      const db = yield* testDatabase(backend)
      yield* Effect.gen(function*() {
        const agents = yield* Agents
        const repo = yield* PushRepo
        yield* agents.add(AGENT, validBody())
        yield* repo.ensurePushAgent(AGENT, 1000)
        yield* repo.ensurePushAgent(AGENT, 2000)
        const attestation = (idx: number) => ({ agent_id: AGENT, idx, capabilities: "[]", evidence_requested: "[]", boot_time: "x", capabilities_received_at: 1, challenges_expire_at: 2 })
        expect(yield* repo.insertAttestation(attestation(0))).toEqual(true)
        expect(yield* repo.insertAttestation(attestation(0))).toEqual(false)
        expect(yield* repo.insertAttestation(attestation(1))).toEqual(true)
        const context = Option.getOrThrow(yield* repo.attestationContext(AGENT))
        expect([context.agent.agent_id, context.agent.accept_tpm_hash_algs, context.agent.runtime_policy_has_policy]).toEqual([AGENT, validBody().accept_tpm_hash_algs, false])
        expect(Option.map(context.push, (p) => p.evaluation_state)).toEqual(Option.some(null))
        expect(Option.map(context.latest, (l) => [l.idx, l.stage, l.evaluation, l.evidence_received_at])).toEqual(Option.some([1, "awaiting_evidence", "pending", null]))
        expect(yield* repo.attestationContext("d432fbb3-d2f1-4a97-9ef7-75bd81c0ffff")).toEqual(Option.none())
        yield* repo.recordOutcome(AGENT, { pass: true, at: 5000, deadlineAt: 15_000, evaluationState: null, clearFailures: false })
        expect(yield* repo.nextDeadline).toEqual(Option.some(15_000))
        expect(yield* repo.expireDeadlines(14_999)).toEqual([])
        expect(yield* repo.expireDeadlines(15_000)).toEqual([AGENT])
        const row = yield* repo.findPushAgent(AGENT)
        expect(Option.map(row, (r) => [r.accept_attestations, r.attestation_count])).toEqual(Option.some([false, 1]))
        expect(yield* repo.nextDeadline).toEqual(Option.none())
        expect(yield* repo.restoreAcceptance(AGENT, 20_000)).toEqual(true)
        expect(Option.map(yield* repo.findPushAgent(AGENT), (r) => [r.accept_attestations, r.deadline_at])).toEqual(Option.some([true, null]))
        // only the latest attestation, and only while it awaits evidence, takes evidence
        expect(yield* repo.acceptEvidence(AGENT, 0, "[]", 3)).toEqual(false)
        expect(yield* repo.acceptEvidence(AGENT, 1, "[]", 3)).toEqual(true)
        expect(yield* repo.acceptEvidence(AGENT, 1, "[]", 4)).toEqual(false)
        const sql = yield* SqlClient.SqlClient
        yield* sql`DELETE FROM verifier_agents WHERE agent_id = ${AGENT}`
        expect((yield* sql`SELECT agent_id FROM push_agents`).length + (yield* sql`SELECT agent_id FROM push_attestations`).length).toEqual(0)
      }).pipe(Effect.provide(PushRepo.Default), Effect.provide(verifierLayer(db)))
    }).pipe(Effect.scoped), 60_000)

  it.live.skipIf(!available)("pruning keeps each agent's latest attestations and the pending ones", () =>
    Effect.gen(function*() {
      const db = yield* testDatabase(backend)
      yield* Effect.gen(function*() {
        const agents = yield* Agents
        const repo = yield* PushRepo
        const other = "d432fbb3-d2f1-4a97-9ef7-75bd81c00001"
        for (const id of [AGENT, other]) yield* agents.add(id, validBody())
        const attestation = (agentId: string, idx: number) => ({ agent_id: agentId, idx, capabilities: "[]", evidence_requested: "[]", boot_time: "x", capabilities_received_at: 1, challenges_expire_at: 2 })
        const complete = (agentId: string, idx: number) => repo.completeAttestation(agentId, idx, { pass: true, reason: null, failures: "[]", at: 5 })
        // AGENT: 0-4 judged, 5 awaiting (its latest); 1 stays pending (evidence never judged)
        for (let i = 0; i <= 5; i++) {
          yield* repo.insertAttestation(attestation(AGENT, i))
          if (i === 1 || i === 5) continue
          yield* repo.acceptEvidence(AGENT, i, "[]", 3)
          yield* complete(AGENT, i)
        }
        // the other agent: only 0 and 1, both judged
        for (const i of [0, 1]) {
          yield* repo.insertAttestation(attestation(other, i))
          yield* repo.acceptEvidence(other, i, "[]", 3)
          yield* complete(other, i)
        }
        yield* repo.pruneAttestations(2)
        const left = (agentId: string) => Effect.map(repo.listAttestations(agentId), (rows) => rows.map((r) => [r.idx, r.stage]))
        expect(yield* left(AGENT)).toEqual([[1, "awaiting_evidence"], [4, "verification_complete"], [5, "awaiting_evidence"]])
        expect(yield* left(other)).toEqual([[0, "verification_complete"], [1, "verification_complete"]])
      }).pipe(Effect.provide(PushRepo.Default), Effect.provide(verifierLayer(db)))
    }).pipe(Effect.scoped), 60_000)
})
