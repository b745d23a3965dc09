/**
 * Time in the push model, under TestClock: the deadline fires at quote_interval * 5 and acceptance
 * stops (status TIMEOUT); a restarted verifier gives every agent one full deadline from its start
 * (from the moment it listens) before a deadline that passed while it was down ends acceptance,
 * and an agent that attests within it never times out; an admin reactivation restores acceptance
 * and the next pass keeps it; a premature attestation is refused with the seconds to wait; tokens
 * expire after session_lifetime and a pass extends them; session creation is rate limited per
 * client address and tokens per agent, with the seconds until the window frees; each minute,
 * attestations beyond an agent's latest push_attestations_kept are deleted (as each new one is made, and by a sweep).
 */
import { describe, expect, it } from "@effect/vitest"
import { Clock, Duration, Effect, Either, Layer, Option, TestClock } from "effect"
import { capabilitiesOf, collectEvidence } from "../../src/push-agent/evidence.js"
import { Agents } from "../../src/verifier/domain/Agents.js"
import { Attestations } from "../../src/verifier/push/Attestations.js"
import { Liveness } from "../../src/verifier/push/Liveness.js"
import { AgentRepo } from "../../src/verifier/domain/repo/AgentRepo.js"
import { pushAttestationStatus } from "../../src/verifier/domain/pushStore/pushStatus.js"
import { PushRepo } from "../../src/verifier/domain/pushStore/repo.js"
import { PushDomainLive } from "../../src/verifier/push/PushDomain.js"
import { Sessions } from "../../src/verifier/push/Sessions.js"
import { type TestBackend, testDatabase } from "../support/db.js"
import type { DatabaseOptions } from "../../src/db/Sql.js"
import { verifierLayer } from "../verifier/support.js"
import { enrol, proveSession, SimAgent, simulatedAgent } from "./support.js"

const AGENT = "d432fbb3-d2f1-4a97-9ef7-75bd81c00000"
const domain = (db: DatabaseOptions, config: Parameters<typeof verifierLayer>[1] = {}) =>
  PushDomainLive.pipe(Layer.provideMerge(verifierLayer(db, { quote_interval: 2, session_lifetime: 180, ...config })))

/** Phases 1 and 2 through the domain, then the verdict. */
const attest = Effect.gen(function*() {
  const sim = yield* SimAgent
  const attestations = yield* Attestations
  const caps = yield* Effect.orDie(capabilitiesOf(sim.id, sim.source))
  const created = yield* attestations.create(AGENT, caps)
  const evidence = yield* Effect.orDie(collectEvidence(sim.tpm, sim.id, sim.source, JSON.parse(created.evidence_requested)))
  yield* attestations.submit(AGENT, created.idx, evidence)
  yield* attestations.idle
  return Option.getOrThrow(yield* (yield* PushRepo).findAttestation(AGENT, created.idx))
})

const pushState = Effect.flatMap(PushRepo, (r) => Effect.map(r.findPushAgent(AGENT), Option.getOrThrow))
/** Lets the liveness fiber run after the clock moved. */
const settle = Effect.repeatN(Effect.yieldNow(), 50)

describe("push liveness and time", () => {
  const backend: TestBackend = "sqlite"
  /** An attestation of AGENT stored directly, its evidence taken and its verdict not in yet. */
  const acceptedAttestation = (repo: PushRepo, idx: number, challengesExpireAt: number) =>
    Effect.zipRight(
      repo.insertAttestation({ agent_id: AGENT, idx, capabilities: "[]", evidence_requested: "[]", boot_time: "x", capabilities_received_at: 0, challenges_expire_at: challengesExpireAt }),
      repo.acceptEvidence(AGENT, idx, "[]", 0)
    )
  it.scoped("the deadline fires at quote_interval * 5, survives a restart, and reactivation restores acceptance", () =>
    Effect.gen(function*() {
      const db = yield* testDatabase(backend)
      yield* Effect.gen(function*() {
        yield* enrol(AGENT)
        expect((yield* attest).evaluation).toEqual("pass")
        const early = yield* Effect.either((yield* Attestations).create(AGENT, yield* Effect.orDie(capabilitiesOf((yield* SimAgent).id, (yield* SimAgent).source))))
        expect(Either.isLeft(early) && early.left._tag === "PrematureAttestation" ? early.left.waitSeconds : early).toEqual(2)
        yield* TestClock.adjust(Duration.millis(9_999))
        yield* settle
        expect(pushAttestationStatus(yield* pushState)).toEqual("PASS")
        yield* TestClock.adjust(Duration.millis(1))
        yield* settle
        expect([(yield* pushState).accept_attestations, pushAttestationStatus(yield* pushState)]).toEqual([false, "TIMEOUT"])
        // the v2 status shows it
        const v2 = yield* (yield* Agents).show(AGENT, { major: 2, minor: 6 })
        expect(["attestation_status" in v2 ? v2.attestation_status : undefined, v2.attestation_count]).toEqual(["TIMEOUT", 1])
        expect(yield* (yield* AgentRepo).activeOf("default")).toEqual([])
        // a push agent may attest again after a timeout (403 is for pull agents): a pass restores acceptance
        expect((yield* attest).evaluation).toEqual("pass")
        expect(pushAttestationStatus(yield* pushState)).toEqual("PASS")
      }).pipe(Effect.provide(domain(db)), Effect.scoped)

      // the verifier is down while the deadline passes; the next one gives the agent one full
      // deadline (5 * 2 s) from its start, then applies it
      yield* TestClock.adjust(Duration.seconds(60))
      yield* Effect.gen(function*() {
        yield* settle
        expect(pushAttestationStatus(yield* pushState)).toEqual("PASS")
        yield* TestClock.adjust(Duration.millis(9_999))
        yield* settle
        expect(pushAttestationStatus(yield* pushState)).toEqual("PASS")
        yield* TestClock.adjust(Duration.millis(1))
        yield* settle
        expect(pushAttestationStatus(yield* pushState)).toEqual("TIMEOUT")
        yield* (yield* Agents).reactivate(AGENT)
        expect([(yield* pushState).accept_attestations, (yield* pushState).deadline_at]).toEqual([true, null])
        // no deadline until the next attestation: time alone does not time it out again
        yield* TestClock.adjust(Duration.seconds(600))
        yield* settle
        expect(pushAttestationStatus(yield* pushState)).toEqual("PASS")
      }).pipe(Effect.provide(domain(db)), Effect.scoped)
    }).pipe(Effect.provide(simulatedAgent("push-liveness"))), 60_000)

  it.scoped("a restart is not a failure: an agent that attests within one deadline of the verifier listening never times out", () =>
    Effect.gen(function*() {
      const db = yield* testDatabase(backend)
      yield* Effect.gen(function*() {
        yield* enrol(AGENT)
        expect((yield* attest).evaluation).toEqual("pass")
      }).pipe(Effect.provide(domain(db)), Effect.scoped)

      // down for a minute: the stored deadline (10 s after the pass) passed long ago
      yield* TestClock.adjust(Duration.seconds(60))
      yield* Effect.gen(function*() {
        const liveness = yield* Liveness
        // the domain is up 3 s before the listener binds: the grace runs from the listening
        yield* TestClock.adjust(Duration.seconds(3))
        yield* liveness.listening
        yield* TestClock.adjust(Duration.seconds(9))
        yield* settle
        expect(pushAttestationStatus(yield* pushState)).toEqual("PASS")
        // the agent is back 12 s after the start: its pass moves its deadline 10 s on
        expect((yield* attest).evaluation).toEqual("pass")
        yield* TestClock.adjust(Duration.seconds(5))
        yield* settle
        expect([(yield* pushState).accept_attestations, pushAttestationStatus(yield* pushState)]).toEqual([true, "PASS"])
        // and its next deadline is applied as before
        yield* TestClock.adjust(Duration.seconds(5))
        yield* settle
        expect(pushAttestationStatus(yield* pushState)).toEqual("TIMEOUT")
      }).pipe(Effect.provide(domain(db)), Effect.scoped)
    }).pipe(Effect.provide(simulatedAgent("push-restart-grace"))), 60_000)

  it.scoped("a clock that went back does not stretch a deadline: a silent agent still times out within two deadlines", () =>
    Effect.gen(function*() {
      const db = yield* testDatabase(backend)
      yield* TestClock.adjust(Duration.hours(2))
      yield* Effect.gen(function*() {
        yield* enrol(AGENT)
        expect((yield* attest).evaluation).toEqual("pass")
      }).pipe(Effect.provide(domain(db)), Effect.scoped)

      // the verifier starts again on a machine whose clock is an hour behind: the stored deadline
      // (10 s after the pass) now lies an hour and 10 s ahead
      yield* TestClock.setTime(Date.UTC(1970, 0, 1, 1, 0, 0))
      yield* Effect.gen(function*() {
        yield* (yield* Liveness).listening
        yield* TestClock.adjust(Duration.seconds(10)) // the restart's grace
        yield* settle
        expect(pushAttestationStatus(yield* pushState)).toEqual("PASS")
        yield* TestClock.adjust(Duration.seconds(10)) // one deadline more, not an hour
        yield* settle
        expect(pushAttestationStatus(yield* pushState)).toEqual("TIMEOUT")
      }).pipe(Effect.provide(domain(db)), Effect.scoped)
    }).pipe(Effect.provide(simulatedAgent("push-clock-back"))), 60_000)

  it.scoped("a wall clock that jumps forward gives every agent one full deadline from the jump, as a restart does", () =>
    Effect.gen(function*() {
      const db = yield* testDatabase(backend)
      // the wall clock (Date.now) runs `offset` ahead of TestClock; the monotonic clock does not
      // (inside, TestClock.adjust would look for a TestClock in place of this one: `test` moves time)
      const test = yield* TestClock.testClock()
      const offset = { ms: 0 }
      const jumping: Clock.Clock = {
        [Clock.ClockTypeId]: Clock.ClockTypeId,
        unsafeCurrentTimeMillis: () => test.unsafeCurrentTimeMillis() + offset.ms,
        unsafeCurrentTimeNanos: () => test.unsafeCurrentTimeNanos(),
        currentTimeMillis: Effect.sync(() => test.unsafeCurrentTimeMillis() + offset.ms),
        currentTimeNanos: Effect.sync(() => test.unsafeCurrentTimeNanos()),
        sleep: (d) => test.sleep(d)
      }
      yield* Effect.gen(function*() {
        yield* enrol(AGENT)
        yield* test.adjust(Duration.seconds(10)) // past the start's grace
        expect((yield* attest).evaluation).toEqual("pass")
        offset.ms = 3_600_000 // NTP steps the clock an hour forward: every stored deadline now lies an hour behind
        yield* settle // the sweeper looks (the pass woke it)
        expect(pushAttestationStatus(yield* pushState)).toEqual("PASS")
        yield* test.adjust(Duration.millis(9_999))
        yield* settle
        expect(pushAttestationStatus(yield* pushState)).toEqual("PASS")
        // an agent that attests within the grace keeps passing; a silent one times out one deadline later
        expect((yield* attest).evaluation).toEqual("pass")
        yield* test.adjust(Duration.millis(9_999))
        yield* settle
        expect(pushAttestationStatus(yield* pushState)).toEqual("PASS")
        yield* test.adjust(Duration.seconds(11))
        yield* settle
        expect(pushAttestationStatus(yield* pushState)).toEqual("TIMEOUT")
      }).pipe(Effect.provide(domain(db)), Effect.scoped, Effect.withClock(jumping))
    }).pipe(Effect.provide(simulatedAgent("push-clock-forward"))), 60_000)

  it.scoped("tokens expire after session_lifetime, a pass extends them; creations are limited per address, tokens per agent", () =>
    Effect.gen(function*() {
      const db = yield* testDatabase(backend)
      yield* Effect.gen(function*() {
        yield* enrol(AGENT)
        const sessions = yield* Sessions
        const methods = [{ authentication_class: "pop", authentication_type: "tpm_pop" }]
        const proved = yield* proveSession(AGENT)
        expect(proved._tag).toEqual("Pass")
        const token = (proved as { token: string }).token
        yield* TestClock.adjust(Duration.seconds(179))
        expect((yield* sessions.checkToken(token)).agent_id).toEqual(AGENT)
        // a pass at 179 s extends the token to 179 + 180 s
        expect((yield* attest).evaluation).toEqual("pass")
        yield* TestClock.adjust(Duration.seconds(179))
        expect((yield* sessions.checkToken(token)).agent_id).toEqual(AGENT)
        yield* TestClock.adjust(Duration.seconds(1))
        expect(yield* Effect.flip(sessions.checkToken(token))).toMatchObject({ _tag: "TokenRefused", reason: "expired" })

        // 50 creations per address per 60 s, whatever agent they name; another address is not affected
        for (let i = 0; i < 50; i++) yield* sessions.create({ agentId: `other-${i}`, methods, clientAddress: "10.0.0.1" })
        const limited = yield* Effect.flip(sessions.create({ agentId: AGENT, methods, clientAddress: "10.0.0.1" }))
        expect(limited).toMatchObject({ _tag: "SessionRateLimited", scope: "ip", retryAfterSeconds: 60 })
        expect((yield* sessions.create({ agentId: AGENT, methods, clientAddress: "10.0.0.2" })).agent_id).toEqual(AGENT)
        // an IPv6 client is counted by its /64
        for (let i = 0; i < 50; i++) yield* sessions.create({ agentId: AGENT, methods, clientAddress: `2001:db8:1:2::${i.toString(16)}` })
        expect(yield* Effect.flip(sessions.create({ agentId: AGENT, methods, clientAddress: "2001:db8:1:2:ffff::1" }))).toMatchObject({ scope: "ip" })
        yield* TestClock.adjust(Duration.seconds(60))
        expect((yield* sessions.create({ agentId: AGENT, methods, clientAddress: "10.0.0.1" })).agent_id).toEqual(AGENT)

        // 15 tokens per agent per 60 s: only its own proofs count (one was issued above, outside the window now)
        const prove = proveSession(AGENT)
        for (let i = 0; i < 15; i++) expect((yield* prove)._tag).toEqual("Pass")
        expect(yield* Effect.flip(prove)).toMatchObject({ _tag: "SessionRateLimited", scope: "agent", retryAfterSeconds: 60 })
        yield* TestClock.adjust(Duration.seconds(60))
        expect((yield* prove)._tag).toEqual("Pass")
      }).pipe(Effect.provide(domain(db)), Effect.scoped)
    }).pipe(Effect.provide(simulatedAgent("push-sessions"))), 60_000)

  it.scoped("a verification still running answers 503 verification_in_progress with the seconds left, then lets the agent in", () =>
    Effect.gen(function*() {
      const db = yield* testDatabase(backend)
      yield* Effect.gen(function*() {
        yield* enrol(AGENT)
        const repo = yield* PushRepo
        // an attestation whose evidence was taken and whose verdict is not in yet
        yield* repo.ensurePushAgent(AGENT, 0)
        yield* acceptedAttestation(repo, 0, 1_800_000)
        const sim = yield* SimAgent
        const caps = yield* Effect.orDie(capabilitiesOf(sim.id, sim.source))
        const busy = yield* Effect.flip((yield* Attestations).create(AGENT, caps))
        expect(busy).toMatchObject({ _tag: "VerificationInProgress", waitSeconds: 60 })
        yield* TestClock.adjust(Duration.seconds(60))
        expect((yield* (yield* Attestations).create(AGENT, caps)).idx).toEqual(1)
      }).pipe(Effect.provide(domain(db)), Effect.scoped)
    }).pipe(Effect.provide(simulatedAgent("push-busy"))), 60_000)

  it.scoped("each new attestation trims its agent's completed history to push_attestations_kept", () =>
    Effect.gen(function*() {
      const db = yield* testDatabase(backend)
      yield* Effect.gen(function*() {
        yield* enrol(AGENT)
        const indexes = Effect.flatMap(PushRepo, (r) => Effect.map(r.listAttestations(AGENT), (rows) => rows.map((a) => a.idx)))
        const expected = [[0], [0, 1], [1, 2], [2, 3]]
        for (const want of expected) {
          expect((yield* attest).evaluation).toEqual("pass")
          expect(yield* indexes).toEqual(want)
          yield* TestClock.adjust(Duration.seconds(2))
        }
      }).pipe(Effect.provide(domain(db, { push_attestations_kept: 2 })), Effect.scoped)
    }).pipe(Effect.provide(simulatedAgent("push-history"))), 60_000)

  it.scoped("a minute after start the sweep deletes completed attestations beyond push_attestations_kept that no new one trimmed", () =>
    Effect.gen(function*() {
      const db = yield* testDatabase(backend)
      yield* Effect.gen(function*() {
        yield* enrol(AGENT)
        const repo = yield* PushRepo
        // four judged attestations written without the creation path (as an older process, or a larger keep, left them)
        yield* repo.ensurePushAgent(AGENT, 0)
        for (let i = 0; i < 4; i++) {
          yield* acceptedAttestation(repo, i, 1)
          yield* repo.completeAttestation(AGENT, i, { pass: true, reason: null, failures: "[]", at: 0 })
        }
        const indexes = Effect.map(repo.listAttestations(AGENT), (rows) => rows.map((a) => a.idx))
        yield* TestClock.adjust(Duration.seconds(59))
        yield* settle
        expect(yield* indexes).toEqual([0, 1, 2, 3])
        yield* TestClock.adjust(Duration.seconds(1))
        yield* settle
        expect(yield* indexes).toEqual([2, 3])
      }).pipe(Effect.provide(domain(db, { push_attestations_kept: 2 })), Effect.scoped)
    }).pipe(Effect.provide(simulatedAgent("push-history-sweep"))), 60_000)
})
