/**
 * One compiler, one error (issue 23 §1): the pull loop and the push verdict compile the same stored
 * configuration to the same policy (differing only in what the model decides: the NK binding) and
 * refuse what they cannot honour with the same class, AgentConfigUnusable, naming the same field.
 * On SQLite and PostgreSQL (the policies are read through the cache from storage).
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Layer, Option } from "effect"
import { AgentConfigUnusable } from "../../src/attestation/AgentConfigUnusable.js"
import type { VerifierOptions } from "../../src/config/sections.js"
import { VerifierConfig } from "../../src/config/services.js"
import { Agents } from "../../src/verifier/domain/Agents.js"
import { defaultSeverityPolicy } from "../../src/attestation/evaluate/severity.js"
import { compilePullAgent } from "../../src/verifier/pull/agentPolicy.js"
import { PolicyCache } from "../../src/verifier/domain/policy/PolicyCache.js"
import { compileSettingsOf } from "../../src/verifier/domain/policy/storedPolicies.js"
import { makeAgentPolicies } from "../../src/verifier/push/agentPolicy.js"
import { AgentRepo } from "../../src/verifier/domain/repo/AgentRepo.js"
import { MbPolicyRepo, RuntimePolicyRepo } from "../../src/verifier/domain/repo/PolicyRepo.js"
import type { AgentView } from "../../src/verifier/domain/repo/rows.js"
import { readVectorText } from "../support/vectors.js"
import { testDatabase } from "../support/db.js"
import { backends, validBody, verifierLayer } from "../verifier/support.js"

const AGENT = "one-compiler-agent"
const tenantKeys = JSON.stringify({ meta: { version: 1 }, keyids: [], pubkeys: [readVectorText("tpm", "ima", "ima_cert.pem")] })

const onStorage = (backend: "sqlite" | "pg", config: Partial<VerifierOptions> = {}) =>
  Layer.unwrapScoped(Effect.map(testDatabase(backend), (db) => verifierLayer(db, config)))

const storedView = Effect.flatMap(AgentRepo, (repo) => Effect.map(Effect.orDie(repo.findView(AGENT)), Option.getOrThrow))

/** The pull loop's and the push verdict's compilation of one view. */
const bothCompile = (view: AgentView) =>
  Effect.gen(function*() {
    const config = yield* VerifierConfig
    const sources = { cache: yield* PolicyCache, runtimePolicies: yield* RuntimePolicyRepo, mbPolicies: yield* MbPolicyRepo }
    const pull = yield* Effect.either(compilePullAgent(view, compileSettingsOf(config, defaultSeverityPolicy, "pull"), sources))
    const push = yield* Effect.either((yield* makeAgentPolicies).policyOf(view))
    return { pull: Either.map(pull, (c) => c.policy), push }
  })

const refusal = (r: Either.Either<unknown, unknown>) =>
  Either.isLeft(r) && r.left instanceof AgentConfigUnusable ? { field: r.left.field, agentId: r.left.agentId } : r

describe.each(backends)("one agent-policy compiler on %s", (backend, available) => {
  it.live.skipIf(!available)("pull and push compile the tenant's IMA keys alike; only the NK binding differs", () =>
    Effect.gen(function*() {
      yield* Effect.orDie((yield* Agents).add(AGENT, { ...validBody(), ima_sign_verification_keys: tenantKeys }))
      const { pull, push } = yield* bothCompile(yield* storedView)
      const facts = (r: typeof pull) =>
        Either.map(r, (p) => ({ keys: p.imaKeyring?.size, runtime: p.runtimePolicy !== undefined, bindNk: p.options.bindNk, checkClock: p.options.checkClock }))
      expect(facts(pull)).toEqual(Either.right({ keys: 1, runtime: true, bindNk: true, checkClock: true }))
      expect(facts(push)).toEqual(Either.right({ keys: 1, runtime: true, bindNk: false, checkClock: true }))
    }).pipe(Effect.provide(onStorage(backend))), 60_000)

  it.live.skipIf(!available)("both refuse an unknown measured_boot_policy_name, a policy not stored and bad stored fields with one class", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* Effect.orDie((yield* Agents).add(AGENT, { ...validBody(), mb_policy: JSON.stringify({ scrtm: [] }) }))
      const view = yield* storedView
      const same = (field: string) => ({ pull: { field, agentId: AGENT }, push: { field, agentId: AGENT } })
      const refused = (v: AgentView) => Effect.map(bothCompile(v), (r) => ({ pull: refusal(r.pull), push: refusal(r.push) }))

      expect(yield* refused(view)).toEqual(same("measured_boot_policy_name"))
      yield* Effect.orDie(sql`UPDATE verifier_agents SET ima_sign_verification_keys = ${"{\"pubkeys\": [\"x\"]}"} WHERE agent_id = ${AGENT}`)
      expect(yield* refused(yield* storedView)).toEqual(same("ima_sign_verification_keys"))
    }).pipe(Effect.provide(onStorage(backend, { measured_boot_policy_name: "no-such-policy" }))), 60_000)

  it.live.skipIf(!available)("both name a runtime policy that is not stored", () =>
    Effect.gen(function*() {
      yield* Effect.orDie((yield* Agents).add(AGENT, validBody()))
      const view = yield* storedView
      const gone = { ...view, runtime_policy_name: "gone-policy", runtime_policy_checksum: "f".repeat(64) }
      const r = yield* bothCompile(gone)
      expect({ pull: refusal(r.pull), push: refusal(r.push) }).toEqual({
        pull: { field: "runtime_policy_name", agentId: AGENT },
        push: { field: "runtime_policy_name", agentId: AGENT }
      })
    }).pipe(Effect.provide(onStorage(backend))), 60_000)
})
