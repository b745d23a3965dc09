/**
 * The push tables on SQLite and PostgreSQL: an attestation index is taken once, the attestation
 * context reads the agent, its push row and its latest attestation in one statement, deadlines are
 * stored and expire acceptance, restoring acceptance clears them, deleting the agent removes
 * its push rows, pruning keeps each agent's latest attestations and anything still pending, a
 * verdict writes the attestation, the push state and the active token all together or not at all
 * (and only once: a verdict on an attestation already judged writes nothing),
 * and sessions: a proof is stored once, a newer one replaces the agent's active session, an
 * administrator's change ends them with its reason, the context read and the accept see the
 * request's session, and expired sessions are deleted; cluster mode's orphans are listed by the
 * runner that accepted the evidence.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect, type Layer, Option } from "effect"
import { Agents } from "../../src/verifier/domain/Agents.js"
import { PushRepo } from "../../src/verifier/domain/pushStore/repo.js"
import { testDatabase, type TestBackend } from "../support/db.js"
import { backends, validBody, verifierLayer } from "../verifier/support.js"

const AGENT = "d432fbb3-d2f1-4a97-9ef7-75bd81c00000"

/** `body` with PushRepo and the verifier's services on a fresh database of `backend`. */
const onFreshDatabase = <A, E>(backend: TestBackend, body: Effect.Effect<A, E, PushRepo | Layer.Layer.Success<ReturnType<typeof verifierLayer>>>) =>
  Effect.scoped(Effect.flatMap(testDatabase(backend), (db) => body.pipe(Effect.provide(PushRepo.Default), Effect.provide(verifierLayer(db)))))

describe.each(backends)("push repo on %s", (backend, available) => {
  it.live.skipIf(!available)("indexes, deadlines, acceptance, cascade", () =>
    onFreshDatabase(backend, Effect.gen(function*() {
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
      // evidence received before the deadline and still being judged (its judge died) met it; evidence after it did not
      yield* repo.recordOutcome(AGENT, { pass: true, at: 21_000, deadlineAt: 31_000, evaluationState: null, clearFailures: false })
      expect(yield* repo.expireDeadlines(31_000)).toEqual([])
      yield* repo.recordOutcome(AGENT, { pass: true, at: 21_000, deadlineAt: 2, evaluationState: null, clearFailures: false })
      expect(yield* repo.expireDeadlines(31_000)).toEqual([AGENT])
      const sql = yield* SqlClient.SqlClient
      yield* sql`DELETE FROM verifier_agents WHERE agent_id = ${AGENT}`
      expect((yield* sql`SELECT agent_id FROM push_agents`).length + (yield* sql`SELECT agent_id FROM push_attestations`).length).toEqual(0)
    })), 60_000)

  it.live.skipIf(!available)("cluster mode's orphan lists: by the runner that accepted the evidence, and past verification_timeout", () =>
    onFreshDatabase(backend, Effect.gen(function*() {
      const agents = yield* Agents
      const repo = yield* PushRepo
      const ids = ["d432fbb3-d2f1-4a97-9ef7-75bd81c00010", "d432fbb3-d2f1-4a97-9ef7-75bd81c00011", "d432fbb3-d2f1-4a97-9ef7-75bd81c00012"]
      // accepted by runner a (at 10), by runner b (at 20), and in single-process mode (no judge, at 30)
      for (const [i, id] of ids.entries()) {
        yield* agents.add(id, validBody())
        yield* repo.insertAttestation({ agent_id: id, idx: 0, capabilities: "[]", evidence_requested: "[]", boot_time: "x", capabilities_received_at: 1, challenges_expire_at: 2 })
        expect(yield* repo.acceptEvidence(id, 0, "[]", 10 * (i + 1), undefined, ["a:1", "b:2", undefined][i])).toEqual(true)
      }
      const agentsOf = (rows: ReadonlyArray<{ readonly agentId: string }>) => rows.map((r) => r.agentId).sort()
      expect(agentsOf(yield* repo.evaluatingJudgedBy("a:1"))).toEqual([ids[0]])
      expect(agentsOf(yield* repo.orphanedVerdicts(["a:1", "b:2"], 0))).toEqual([])
      expect(agentsOf(yield* repo.orphanedVerdicts(["a:1"], 0))).toEqual([ids[1]])
      expect(agentsOf(yield* repo.orphanedVerdicts([], 0))).toEqual([ids[0], ids[1]])
      expect(agentsOf(yield* repo.orphanedVerdicts(["a:1", "b:2"], 31))).toEqual(ids)
      // a judged verdict is nobody's orphan
      yield* repo.completeAttestation(ids[1]!, 0, { pass: true, reason: null, failures: "[]", at: 40 })
      expect(agentsOf(yield* repo.orphanedVerdicts([], 0))).toEqual([ids[0]])
    })), 60_000)

  it.live.skipIf(!available)("pruning keeps each agent's latest attestations and the pending ones", () =>
    onFreshDatabase(backend, Effect.gen(function*() {
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
      // a chunk of 1 deletes one row a statement: the sweep goes on until a chunk comes back short
      expect(yield* repo.pruneAttestations(2, 1)).toEqual(1)
      expect(yield* repo.pruneAttestations(2, 10)).toEqual(2)
      expect(yield* repo.pruneAttestations(2, 10)).toEqual(0)
      const left = (agentId: string) => Effect.map(repo.listAttestations(agentId), (rows) => rows.map((r) => [r.idx, r.stage]))
      expect(yield* left(AGENT)).toEqual([[1, "awaiting_evidence"], [4, "verification_complete"], [5, "awaiting_evidence"]])
      expect(yield* left(other)).toEqual([[0, "verification_complete"], [1, "verification_complete"]])
      // one agent's history by key (as each new attestation trims it): completed rows up to the index, only that agent's
      yield* repo.pruneAgentAttestations(other, 0)
      yield* repo.pruneAgentAttestations(AGENT, 5)
      expect(yield* left(other)).toEqual([[1, "verification_complete"]])
      expect(yield* left(AGENT)).toEqual([[1, "awaiting_evidence"], [5, "awaiting_evidence"]])
    })), 60_000)

  it.live.skipIf(!available)("a verdict writes the attestation, the push state and the active token together, or none of them", () =>
    onFreshDatabase(backend, Effect.gen(function*() {
      const agents = yield* Agents
      const repo = yield* PushRepo
      const sql = yield* SqlClient.SqlClient
      yield* agents.add(AGENT, validBody())
      yield* repo.ensurePushAgent(AGENT, 1)
      yield* repo.activateSession({ sessionId: "s-active", agentId: AGENT, challenge: "c", createdAt: 1, challengesExpireAt: 2, tokenHash: "h", expiresAt: 100, at: 1 })
      const judged = (idx: number) =>
        Effect.zipRight(
          repo.insertAttestation({ agent_id: AGENT, idx, capabilities: "[]", evidence_requested: "[]", boot_time: "x", capabilities_received_at: 1, challenges_expire_at: 2 }),
          repo.acceptEvidence(AGENT, idx, "[]", 3)
        )
      const verdict = (idx: number, pass: boolean, at: number, o: { clearFailures: boolean; tokenExpiresAt: number | undefined }) =>
        repo.recordVerdict(AGENT, idx, {
          verdict: { pass, reason: pass ? null : "policy_violation", failures: pass ? "[]" : "[{\"type\":\"x\"}]", at },
          outcome: { pass, at, deadlineAt: at + 10, evaluationState: `{"at":${at}}`, clearFailures: o.clearFailures },
          tokenExpiresAt: o.tokenExpiresAt
        })
      const state = Effect.map(repo.findPushAgent(AGENT), Option.map((r) => [r.consecutive_failures, r.attestation_count, r.last_received_at, r.last_success_at, r.deadline_at, r.evaluation_state]))
      const token = Effect.map(repo.findSession("s-active"), Option.map((r) => r.token_expires_at))
      const attestationOf = (idx: number) => Effect.map(repo.findAttestation(AGENT, idx), Option.map((r) => [r.stage, r.evaluation, r.failure_reason, r.verification_completed_at]))

      // a fail: counted, no success time, the token left as it was
      yield* judged(0)
      yield* verdict(0, false, 10, { clearFailures: true, tokenExpiresAt: undefined })
      expect(yield* attestationOf(0)).toEqual(Option.some(["verification_complete", "fail", "policy_violation", 10]))
      expect(yield* state).toEqual(Option.some([1, 0, 10, null, 20, "{\"at\":10}"]))
      expect(yield* token).toEqual(Option.some(100))
      // a pass that keeps earlier failures and extends the token
      yield* judged(1)
      yield* verdict(1, true, 20, { clearFailures: false, tokenExpiresAt: 500 })
      expect(yield* attestationOf(1)).toEqual(Option.some(["verification_complete", "pass", null, 20]))
      expect(yield* state).toEqual(Option.some([1, 1, 20, 20, 30, "{\"at\":20}"]))
      expect(yield* token).toEqual(Option.some(500))
      // a pass that clears them
      yield* judged(2)
      yield* verdict(2, true, 30, { clearFailures: true, tokenExpiresAt: undefined })
      expect(yield* state).toEqual(Option.some([0, 2, 30, 30, 40, "{\"at\":30}"]))
      expect(yield* token).toEqual(Option.some(500))
      // a verdict on an attestation no longer being evaluated leaves that attestation as it is, and
      // the push state and the token too: a verdict run twice (two processes) counts once
      expect(yield* verdict(1, false, 40, { clearFailures: true, tokenExpiresAt: 900 })).toEqual(false)
      expect(yield* verdict(2, true, 45, { clearFailures: true, tokenExpiresAt: 900 })).toEqual(false)
      expect(yield* attestationOf(1)).toEqual(Option.some(["verification_complete", "pass", null, 20]))
      expect(yield* state).toEqual(Option.some([0, 2, 30, 30, 40, "{\"at\":30}"]))
      expect(yield* token).toEqual(Option.some(500))
      // a verdict whose push-state write fails (a trigger refuses it here) changes nothing: the
      // attestation stays being evaluated (judged again at the next start), the token as it was
      yield* judged(3)
      yield* sql.onDialectOrElse({
        pg: () => sql`CREATE FUNCTION refuse() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'refused'; END $$ LANGUAGE plpgsql`.pipe(
          Effect.zipRight(sql`CREATE TRIGGER refuse_outcome BEFORE UPDATE ON push_agents FOR EACH ROW EXECUTE FUNCTION refuse()`)
        ),
        orElse: () => sql`CREATE TRIGGER refuse_outcome BEFORE UPDATE ON push_agents BEGIN SELECT RAISE(ABORT, 'refused'); END`
      })
      const refused = yield* Effect.either(verdict(3, true, 50, { clearFailures: true, tokenExpiresAt: 900 }))
      expect(refused._tag).toEqual("Left")
      expect(yield* attestationOf(3)).toEqual(Option.some(["evaluating_evidence", "pending", null, null]))
      expect(yield* token).toEqual(Option.some(500))
    })), 60_000)

  it.live.skipIf(!available)("sessions: stored once, replaced, ended with a reason, seen by the context read and the accept, swept when expired", () =>
    onFreshDatabase(backend, Effect.gen(function*() {
      const agents = yield* Agents
      const repo = yield* PushRepo
      yield* agents.add(AGENT, { ...validBody(), attestation_model: "push" })
      const session = (id: string, at: number) => ({ sessionId: id, agentId: AGENT, challenge: "c", createdAt: at, challengesExpireAt: at + 60, tokenHash: `h-${id}`, expiresAt: at + 180, at })
      const stateOf = (id: string) => Effect.map(repo.findSession(id), Option.map((r) => [r.active, r.ended_reason, r.token_expires_at]))
      expect(yield* repo.activateSession(session("s1", 1000))).toEqual(true)
      // the same proof again stores nothing, and leaves the session as it is
      expect(yield* repo.activateSession(session("s1", 1000))).toEqual(false)
      expect(yield* stateOf("s1")).toEqual(Option.some([true, null, 1180]))
      // a newer session replaces it
      expect(yield* repo.activateSession(session("s2", 2000))).toEqual(true)
      expect([yield* stateOf("s1"), yield* stateOf("s2")]).toEqual([Option.some([false, "replaced", 1180]), Option.some([true, null, 2180])])
      // the context read carries the request's session; the accept takes evidence only in an active one
      const context = (sessionId: string) => Effect.map(repo.attestationContext(AGENT, sessionId), (c) => Option.flatMap(c, (x) => x.session))
      expect(yield* context("s2")).toEqual(Option.some({ agent_id: AGENT, active: true, ended_reason: null, token_expires_at: 2180 }))
      expect(yield* context("nope")).toEqual(Option.none())
      expect(Option.map(yield* repo.attestationContext(AGENT), (c) => c.agent.operational_state)).toEqual(Option.some(3))
      yield* repo.insertAttestation({ agent_id: AGENT, idx: 0, capabilities: "[]", evidence_requested: "[]", boot_time: "x", capabilities_received_at: 1, challenges_expire_at: 5000 })
      expect(yield* repo.acceptEvidence(AGENT, 0, "[]", 2100, "s1")).toEqual(false)
      expect(yield* repo.acceptEvidence(AGENT, 0, "[]", 2200, "s2")).toEqual(false) // its token expired at 2180
      // an administrator's change ends every active session, saying why
      expect(yield* repo.endAgentSessions(AGENT, "stopped")).toEqual(1)
      expect(yield* stateOf("s2")).toEqual(Option.some([false, "stopped", 2180]))
      expect(yield* context("s2")).toEqual(Option.some({ agent_id: AGENT, active: false, ended_reason: "stopped", token_expires_at: 2180 }))
      expect(yield* repo.acceptEvidence(AGENT, 0, "[]", 2100, "s2")).toEqual(false)
      expect(yield* repo.activateSession(session("s3", 3000))).toEqual(true)
      expect(yield* repo.acceptEvidence(AGENT, 0, "[]", 3100, "s3")).toEqual(true)
      // the sweep: a session goes once its challenge and its token have both expired
      expect(yield* repo.deleteExpiredSessions(1180)).toEqual(0)
      expect(yield* repo.deleteExpiredSessions(1181)).toEqual(1)
      expect(yield* repo.deleteExpiredSessions(2181)).toEqual(1)
      expect([Option.isNone(yield* repo.findSession("s1")), Option.isNone(yield* repo.findSession("s2")), Option.isSome(yield* repo.findSession("s3"))]).toEqual([true, true, true])
      // only an enrolled push agent has an enrolment to prove against
      expect(Option.isSome(yield* repo.findPushEnrolment(AGENT))).toEqual(true)
      yield* agents.add("pull-agent", validBody())
      expect(yield* repo.findPushEnrolment("pull-agent")).toEqual(Option.none())
      expect(yield* repo.findPushEnrolment("unknown")).toEqual(Option.none())
      // one key for challenges, whichever process offers one first
      const key = yield* repo.sessionKey("aa", 1)
      expect([key, yield* repo.sessionKey("bb", 2)]).toEqual(["aa", "aa"])
    })), 60_000)
})
