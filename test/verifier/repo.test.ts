/**
 * The verifier's repositories on SQLite and PostgreSQL: rows round-trip, listings keep creation
 * order, the loop's writes are conditional on `generation` (an admin change in between wins) and
 * on the owner epoch (a loop started later, in any process, wins; the older one's writes all lose),
 * severity only rises, policies in use cannot be deleted, and the notification outbox is bounded,
 * hands each due row to one claimer, and stores a verdict's notices in the verdict's transaction.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option, Redacted, TestClock } from "effect"
import { EMPTY_MB_POLICY } from "../../src/verifier/domain/policy/mbUpload.js"
import { emptyRuntimePolicyData } from "../../src/verifier/domain/policy/runtimeUpload.js"
import { AgentRepo, type NewAgent } from "../../src/verifier/domain/repo/AgentRepo.js"
import { NotificationOutbox } from "../../src/verifier/domain/repo/NotificationOutbox.js"
import { MbPolicyRepo, RuntimePolicyRepo } from "../../src/verifier/domain/repo/PolicyRepo.js"
import { OperationalState } from "../../src/attestation/states.js"
import { testDatabase } from "../support/db.js"
import { backends, verifierLayer } from "./support.js"

const newAgent = (agentId: string, verifierId = "default"): NewAgent => ({
  agent_id: agentId,
  verifier_id: verifierId,
  operational_state: OperationalState.START,
  v: null,
  ip: "127.0.0.1",
  port: 9002,
  tpm_policy: "{\"mask\": \"0x400\"}",
  vtpm_policy: null,
  meta_data: "{}",
  ak_tpm: "AAAA",
  mtls_cert: null,
  runtime_policy_name: agentId,
  mb_policy_name: agentId,
  ima_sign_verification_keys: "",
  revocation_key: "secret-key",
  accept_tpm_hash_algs: ["sha256"],
  accept_tpm_encryption_algs: ["rsa"],
  accept_tpm_signing_algs: ["rsassa"],
  supported_version: "2.2"
})

/** The fence of a loop that read `generation` and took no owner epoch (a fresh agent's is 0). */
const fence = (generation: number, ownerEpoch = 0) => ({ generation, ownerEpoch })

/** An agent with its own empty policies, as agent creation stores it. */
const addAgent = (agentId: string, verifierId = "default") =>
  Effect.gen(function*() {
    expect(yield* (yield* RuntimePolicyRepo).insert(agentId, emptyRuntimePolicyData().data)).toBe(true)
    expect(yield* (yield* MbPolicyRepo).insert(agentId, EMPTY_MB_POLICY)).toBe(true)
    expect(yield* (yield* AgentRepo).insert(newAgent(agentId, verifierId))).toBe(true)
  })

for (const [backend, available] of backends) {
  describe.skipIf(!available)(`verifier repositories on ${backend}`, () => {
    const run = <A, E>(effect: Effect.Effect<A, E, any>) =>
      Effect.gen(function*() {
        const db = yield* testDatabase(backend)
        return yield* effect.pipe(Effect.provide(verifierLayer(db)))
      })

    it.scoped("stores an agent with its initial loop columns and reads it back with its policy facts", () =>
      run(Effect.gen(function*() {
        yield* TestClock.setTime(1_700_000_000_000)
        yield* addAgent("a1")
        const repo = yield* AgentRepo
        const row = Option.getOrThrow(yield* repo.find("a1"))
        expect(row).toMatchObject({
          agent_id: "a1",
          operational_state: 1,
          port: 9002,
          accept_tpm_hash_algs: ["sha256"],
          hash_alg: "",
          severity_level: null,
          attestation_count: 0,
          v_delivered: false,
          generation: 0,
          created_at: 1_700_000_000
        })
        expect(Redacted.value(row.revocation_key)).toBe("secret-key")
        const view = Option.getOrThrow(yield* repo.findView("a1"))
        expect(view.runtime_policy_checksum).toBe(emptyRuntimePolicyData().data.checksum)
        expect([view.runtime_policy_has_policy, view.runtime_policy_digest_count, view.mb_policy_has_policy]).toEqual([false, 0, false])
        expect(yield* repo.find("nope")).toEqual(Option.none())
        expect(yield* repo.insert(newAgent("a1"))).toBe(false)
      })))

    it.scoped("lists ids in creation order, filtered by verifier id, and the active agents of one verifier", () =>
      run(Effect.gen(function*() {
        for (const id of ["zeta", "alpha", "mid"]) yield* addAgent(id)
        yield* addAgent("other-1", "other")
        const repo = yield* AgentRepo
        expect(yield* repo.listIds()).toEqual(["zeta", "alpha", "mid", "other-1"])
        expect(yield* repo.listIds("other")).toEqual(["other-1"])
        expect(yield* repo.listIds("none")).toEqual([])
        yield* repo.adminUpdate("alpha", { operationalState: OperationalState.TENANT_FAILED })
        yield* repo.adminUpdate("mid", { operationalState: OperationalState.TERMINATED })
        expect((yield* repo.activeOf("default")).map((v) => v.agent_id)).toEqual(["zeta"])
        expect(yield* repo.terminatedOf("default")).toEqual(["mid"])
        expect((yield* repo.listViews("default")).map((v) => v.agent_id)).toEqual(["zeta", "alpha", "mid"])
      })))

    it.scoped("a loop write with the generation it read wins; after an admin change it loses and changes nothing", () =>
      run(Effect.gen(function*() {
        yield* addAgent("g1")
        const repo = yield* AgentRepo
        const read = Option.getOrThrow(yield* repo.find("g1")).generation
        const verdict = {
          operationalState: OperationalState.GET_QUOTE,
          valid: true,
          receivedAt: 1000,
          evaluationState: "{\"next\":2}",
          algorithms: { hashAlg: "sha256", encAlg: "rsa", signAlg: "rsassa" },
          nextPollAt: 1002
        }
        expect(yield* repo.recordVerdict("g1", fence(read), verdict)).toBe(true)
        const stopped = yield* repo.adminUpdate("g1", { operationalState: OperationalState.TENANT_FAILED })
        expect(stopped).toEqual(Option.some(read + 1))
        expect(yield* repo.recordVerdict("g1", fence(read), { ...verdict, receivedAt: 2000 })).toBe(false)
        expect(yield* repo.recordRetry("g1", fence(read), { operationalState: 4, retryCount: 1, nextPollAt: 5 })).toBe(false)
        expect(yield* repo.markFailed("g1", fence(read), { event: { eventId: "internal.verifier.not_reachable", severityLevel: 6 } })).toBe(false)
        expect(yield* repo.setState("g1", fence(read), { operationalState: OperationalState.GET_QUOTE })).toBe(false)
        const after = Option.getOrThrow(yield* repo.find("g1"))
        expect(after).toMatchObject({
          operational_state: 10,
          attestation_count: 1,
          last_received_quote: 1000,
          last_successful_attestation: 1000,
          evaluation_state: "{\"next\":2}",
          hash_alg: "sha256",
          severity_level: null,
          next_poll_at: 1002
        })
        // an unknown agent: no generation, and no loop write lands
        expect(yield* repo.adminUpdate("missing", { operationalState: 10 })).toEqual(Option.none())
        expect(yield* repo.recordVerdict("missing", fence(0), verdict)).toBe(false)
      })))

    it.scoped("a loop write with the owner epoch it took wins until a newer loop takes the agent; then every write of the older loop loses", () =>
      run(Effect.gen(function*() {
        yield* addAgent("o1")
        yield* addAgent("o2", "other-verifier")
        const repo = yield* AgentRepo
        const first = Option.getOrThrow(yield* repo.takeOwnership("o1", "default"))
        const verdict = { operationalState: OperationalState.GET_QUOTE, valid: true, receivedAt: 1000, evaluationState: null, nextPollAt: 1002 }
        expect(yield* repo.recordVerdict("o1", fence(0, first), verdict)).toBe(true)
        // a second loop (a reactivate through another process) takes the next epoch
        const second = Option.getOrThrow(yield* repo.takeOwnership("o1", "default"))
        expect(second).toEqual(first + 1)
        expect(yield* repo.recordVerdict("o1", fence(0, first), { ...verdict, receivedAt: 2000 })).toBe(false)
        expect(yield* repo.recordRetry("o1", fence(0, first), { operationalState: 4, retryCount: 1, nextPollAt: 5 })).toBe(false)
        expect(yield* repo.markFailed("o1", fence(0, first), { event: { eventId: "internal.verifier.not_reachable", severityLevel: 6 } })).toBe(false)
        expect(yield* repo.setState("o1", fence(0, first), { operationalState: OperationalState.START })).toBe(false)
        expect(yield* repo.recordVerdict("o1", fence(0, second), { ...verdict, receivedAt: 3000 })).toBe(true)
        expect(Option.getOrThrow(yield* repo.find("o1"))).toMatchObject({ attestation_count: 2, last_received_quote: 3000, operational_state: 3 })
        expect(yield* repo.ownership("o1")).toEqual(Option.some({ operationalState: 3, ownerEpoch: second }))
        // only this verifier's agents are taken
        expect(yield* repo.takeOwnership("o2", "default")).toEqual(Option.none())
        expect(yield* repo.takeOwnership("missing", "default")).toEqual(Option.none())
        expect(yield* repo.ownership("missing")).toEqual(Option.none())
      })))

    it.scoped("orphans: active pull agents of this verifier whose next poll is long overdue", () =>
      run(Effect.gen(function*() {
        yield* TestClock.setTime(1_000_000)
        for (const id of ["late", "due", "fresh"]) yield* addAgent(id)
        yield* addAgent("elsewhere", "other-verifier")
        const repo = yield* AgentRepo
        expect(yield* repo.recordRetry("late", fence(0), { operationalState: 4, retryCount: 1, nextPollAt: 100 })).toBe(true)
        expect(yield* repo.recordRetry("due", fence(0), { operationalState: 4, retryCount: 1, nextPollAt: 900 })).toBe(true)
        expect(yield* repo.recordRetry("elsewhere", fence(0), { operationalState: 4, retryCount: 1, nextPollAt: 100 })).toBe(true)
        yield* repo.adminUpdate("fresh", { operationalState: OperationalState.TENANT_FAILED })
        // "fresh" is stopped (not active); before its first poll an agent counts from its last change (1000 s)
        expect(yield* repo.orphansOf("default", 500)).toEqual(["late"])
        expect(yield* repo.orphansOf("default", 1001)).toEqual(["late", "due"])
      })))

    it.scoped("a verdict judged against a policy that was replaced meanwhile loses, like a stale generation", () =>
      run(Effect.gen(function*() {
        yield* addAgent("p1")
        const repo = yield* AgentRepo
        const view = Option.getOrThrow(yield* repo.findView("p1"))
        const verdict = {
          operationalState: OperationalState.GET_QUOTE,
          valid: true,
          receivedAt: 1000,
          evaluationState: null,
          nextPollAt: 1002
        }
        const judgedWith = { runtime: view.runtime_policy_checksum, mb: view.mb_policy_checksum }
        expect(yield* repo.recordVerdict("p1", fence(view.generation), { ...verdict, policyChecksums: judgedWith })).toBe(true)
        expect(yield* repo.recordVerdict("p1", fence(view.generation), { ...verdict, receivedAt: 2000, policyChecksums: { ...judgedWith, runtime: "replaced" } }))
          .toBe(false)
        expect(yield* repo.recordVerdict("p1", fence(view.generation), { ...verdict, receivedAt: 3000, policyChecksums: { ...judgedWith, mb: "replaced" } }))
          .toBe(false)
        expect(Option.getOrThrow(yield* repo.find("p1")).last_received_quote).toEqual(1000)
      })))

    it.scoped("keeps the highest severity and its event id; an invalid verdict counts no attestation", () =>
      run(Effect.gen(function*() {
        yield* addAgent("s1")
        const repo = yield* AgentRepo
        const g = 0
        const invalid = (eventId: string, severityLevel: number, receivedAt: number) =>
          repo.recordVerdict("s1", fence(g), {
            operationalState: OperationalState.INVALID_QUOTE,
            valid: false,
            receivedAt,
            event: { eventId, severityLevel },
            evaluationState: null,
            nextPollAt: null
          })
        expect(yield* invalid("ima.pcr_mismatch", 3, 10)).toBe(true)
        expect(yield* invalid("ima.validation.ima-ng.not_in_allowlist", 2, 11)).toBe(true)
        let row = Option.getOrThrow(yield* repo.find("s1"))
        expect([row.severity_level, row.last_event_id, row.last_received_quote, row.attestation_count, row.last_successful_attestation])
          .toEqual([3, "ima.pcr_mismatch", 11, 0, 0])
        expect(yield* repo.markFailed("s1", fence(g), { event: { eventId: "internal.verifier.not_reachable", severityLevel: 6 } })).toBe(true)
        row = Option.getOrThrow(yield* repo.find("s1"))
        expect([row.operational_state, row.severity_level, row.last_event_id, row.next_poll_at]).toEqual([7, 6, "internal.verifier.not_reachable", null])
      })))

    it.scoped("retries and state changes write their columns; reactivation resets the loop's progress and bumps generation", () =>
      run(Effect.gen(function*() {
        yield* addAgent("r1")
        const repo = yield* AgentRepo
        expect(yield* repo.recordRetry("r1", fence(0), { operationalState: OperationalState.GET_QUOTE_RETRY, retryCount: 2, nextPollAt: 77 })).toBe(true)
        expect(Option.getOrThrow(yield* repo.find("r1"))).toMatchObject({ operational_state: 4, retry_count: 2, next_poll_at: 77 })
        expect(yield* repo.setState("r1", fence(0), { operationalState: OperationalState.GET_QUOTE, vDelivered: true, retryCount: 0, nextPollAt: 80 })).toBe(true)
        yield* repo.recordVerdict("r1", fence(0), { operationalState: 3, valid: true, receivedAt: 5, evaluationState: "{}", nextPollAt: 7 })
        expect(Option.getOrThrow(yield* repo.find("r1"))).toMatchObject({ v_delivered: true, retry_count: 0, evaluation_state: "{}" })
        expect(yield* repo.adminUpdate("r1", { operationalState: OperationalState.START, resetProgress: true })).toEqual(Option.some(1))
        expect(Option.getOrThrow(yield* repo.find("r1"))).toMatchObject({
          operational_state: 1,
          v_delivered: false,
          retry_count: 0,
          evaluation_state: null,
          next_poll_at: null,
          attestation_count: 1,
          generation: 1
        })
        expect(yield* repo.remove("r1")).toBe(true)
        expect(yield* repo.remove("r1")).toBe(false)
      })))

    it.scoped("policies: a taken name is reported, replacing an unknown one too; a policy in use names its agent and cannot be deleted", () =>
      run(Effect.gen(function*() {
        const runtime = yield* RuntimePolicyRepo
        const mb = yield* MbPolicyRepo
        const data = emptyRuntimePolicyData().data
        expect(yield* runtime.insert("p2", data)).toBe(true)
        expect(yield* runtime.insert("p1", data)).toBe(true)
        expect(yield* runtime.insert("p1", data)).toBe(false)
        expect(yield* runtime.update("nope", data)).toBe(false)
        expect(yield* runtime.update("p1", { ...data, tpm_policy: "{\"mask\": \"0x1\"}", digest_count: 3 })).toBe(true)
        expect(Option.getOrThrow(yield* runtime.find("p1"))).toMatchObject({ name: "p1", tpm_policy: "{\"mask\": \"0x1\"}", digest_count: 3 })
        expect(yield* runtime.names()).toEqual(["p2", "p1"])
        yield* addAgent("user-1")
        expect(yield* runtime.usedBy("user-1")).toEqual(Option.some("user-1"))
        expect(yield* runtime.usedBy("p1")).toEqual(Option.none())
        // the foreign key refuses deleting a referenced policy even without the domain's check
        const refused = yield* Effect.either(runtime.remove("user-1"))
        expect(refused._tag).toBe("Left")
        expect(yield* mb.usedBy("user-1")).toEqual(Option.some("user-1"))
        expect(yield* runtime.remove("p1")).toBe(true)
        expect(yield* runtime.exists("p1")).toBe(false)
        expect(yield* mb.insert("mb1", { mb_policy: "{\"a\": 1}", checksum: "c", has_policy: true, key_count: 1 })).toBe(true)
        expect(Option.getOrThrow(yield* mb.find("mb1"))).toMatchObject({ mb_policy: "{\"a\": 1}", has_policy: true, key_count: 1 })
        expect(yield* mb.update("zz", EMPTY_MB_POLICY)).toBe(false)
      })))

    it.scoped("the outbox hands out due notifications in order, reschedules failures and drops the oldest past its bound", () =>
      run(Effect.gen(function*() {
        yield* TestClock.setTime(100_000)
        const outbox = yield* NotificationOutbox
        const first = yield* outbox.enqueue({ notifier: "webhook", agentId: "a", payload: "1" }, 2)
        yield* outbox.enqueue({ notifier: "webhook", agentId: "a", payload: "2" }, 2)
        yield* outbox.enqueue({ notifier: "agent", agentId: "a", payload: "x" }, 2)
        const third = yield* outbox.enqueue({ notifier: "webhook", agentId: "b", payload: "3" }, 2)
        expect([first.dropped, third.dropped]).toEqual([0, 1])
        expect(yield* outbox.pending("webhook")).toBe(2)
        const due = yield* outbox.due("webhook", 100, 10)
        expect(due.map((n) => n.payload)).toEqual(["2", "3"])
        yield* outbox.retryLater(due[0]!.id, { attempts: 1, nextAttemptAt: 160, error: "connection refused" })
        yield* outbox.delivered(due[1]!.id)
        expect(yield* outbox.due("webhook", 159, 10)).toEqual([])
        const later = yield* outbox.due("webhook", 160, 10)
        expect(later.map((n) => [n.payload, n.attempts, n.last_error])).toEqual([["2", 1, "connection refused"]])
        expect((yield* outbox.due("agent", 100, 10)).map((n) => n.payload)).toEqual(["x"])
      })))

    it.scoped("claims: a due row is handed to one claimer until it settles it or its lease runs out", () =>
      run(Effect.gen(function*() {
        const outbox = yield* NotificationOutbox
        for (const payload of ["1", "2", "3"]) yield* outbox.enqueue({ notifier: "webhook", agentId: "a", payload }, 10)
        const claim = (claimer: string, now: number, limit = 10) => outbox.claim("webhook", { now, limit, claimer, claimedUntil: now + 60 })
        const first = yield* claim("p1", 100, 2)
        expect(first.map((n) => n.payload)).toEqual(["1", "2"])
        // the other process gets only what p1 did not claim
        const second = yield* claim("p2", 100)
        expect(second.map((n) => n.payload)).toEqual(["3"])
        expect(yield* claim("p2", 100)).toEqual([])
        // a row is settled only by its claimer
        yield* outbox.delivered(first[0]!.id, "p2")
        yield* outbox.retryLater(first[1]!.id, { attempts: 1, nextAttemptAt: 100, error: "x" }, "p2")
        expect(yield* outbox.pending("webhook")).toBe(3)
        yield* outbox.delivered(first[0]!.id, "p1")
        yield* outbox.retryLater(first[1]!.id, { attempts: 1, nextAttemptAt: 100, error: "refused" }, "p1")
        // a failed row is free again at once; p2's claim on "3" holds until its lease runs out
        expect((yield* claim("p2", 120)).map((n) => [n.payload, n.attempts])).toEqual([["2", 1]])
        expect((yield* claim("p1", 159)).map((n) => n.payload)).toEqual([])
        expect((yield* claim("p1", 181)).map((n) => n.payload)).toEqual(["2", "3"])
      })))

    it.scoped("a verdict's notices are stored in its transaction: only when its write wins, never without it", () =>
      run(Effect.gen(function*() {
        yield* addAgent("n1")
        const outbox = yield* NotificationOutbox
        const repo = yield* AgentRepo
        const notice = { notifier: "webhook", agentId: "n1", payload: "revoked" }
        const verdict = { operationalState: OperationalState.INVALID_QUOTE, valid: false, receivedAt: 10, evaluationState: null, nextPollAt: null }
        // a write that loses to a newer owner: no notice
        expect(yield* outbox.withNotices(repo.recordVerdict("n1", fence(0, 5), verdict), [notice], 10)).toEqual({ won: false, dropped: 0 })
        expect(yield* outbox.pending("webhook")).toBe(0)
        // a write that fails after the notice's insert would have run: neither stays
        const failing = Effect.zipRight(repo.recordVerdict("n1", fence(0), verdict), Effect.fail("crash" as const))
        expect(yield* Effect.flip(outbox.withNotices(failing, [notice], 10))).toEqual("crash")
        expect([yield* outbox.pending("webhook"), Option.getOrThrow(yield* repo.find("n1")).last_received_quote]).toEqual([0, 0])
        // a write that wins: its notices with it
        expect(yield* outbox.withNotices(repo.recordVerdict("n1", fence(0), verdict), [notice, { ...notice, notifier: "agent" }], 10))
          .toEqual({ won: true, dropped: 0 })
        expect([yield* outbox.pending("webhook"), yield* outbox.pending("agent")]).toEqual([1, 1])
        expect(Option.getOrThrow(yield* repo.find("n1")).last_received_quote).toEqual(10)
      })))
  })
}
