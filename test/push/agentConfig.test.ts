/**
 * The push verdict compiles an agent's stored configuration as the pull loop does (issue 23 §1),
 * on SQLite and PostgreSQL: what it cannot fully honour is AgentConfigUnusable naming the field,
 * never accept-all or an empty policy. An unknown `measured_boot_policy_name` with a reference
 * state, a runtime policy the row names that is not stored (gone between the context read and the
 * load), unusable stored `ima_sign_verification_keys` (the push verdict never read them) and a
 * bad stored `tpm_policy` (the error carries the agent id and field).
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Layer, Option } from "effect"
import type { VerifierOptions } from "../../src/config/sections.js"
import { Agents } from "../../src/verifier/domain/Agents.js"
import { makeAgentPolicies } from "../../src/verifier/push/agentPolicy.js"
import { AgentRepo } from "../../src/verifier/domain/repo/AgentRepo.js"
import { testDatabase } from "../support/db.js"
import { backends, validBody, verifierLayer } from "../verifier/support.js"

const AGENT = "push-config-agent"
const REFSTATE = JSON.stringify({ scrtm_and_bios: [{ platform_firmware: ["0x1"] }] })

const onStorage = (backend: "sqlite" | "pg", config: Partial<VerifierOptions> = {}) =>
  Layer.unwrapScoped(Effect.map(testDatabase(backend), (db) => verifierLayer(db, config)))

/** Enrols a push agent with `extra` body fields; its stored view as the push verdict reads it. */
const enrolled = (extra: Readonly<Record<string, unknown>> = {}) =>
  Effect.gen(function*() {
    yield* Effect.orDie((yield* Agents).add(AGENT, { ...validBody(), attestation_model: "push", ...extra }))
    return Option.getOrThrow(yield* Effect.orDie((yield* AgentRepo).findView(AGENT)))
  })

/** What the push verdict's compiler answers: the error's tag and facts, or "compiled". */
const pushCompile = (view: Parameters<Effect.Effect.Success<typeof makeAgentPolicies>["policyOf"]>[0]) =>
  Effect.gen(function*() {
    const policies = yield* makeAgentPolicies
    const r = yield* Effect.either(policies.policyOf(view))
    if (Either.isRight(r)) return "compiled"
    const e = r.left as unknown as Record<string, unknown>
    return { tag: e["_tag"], agentId: e["agentId"], field: e["field"], reason: e["reason"] }
  })

describe.each(backends)("push agent configuration on %s", (backend, available) => {
  it.live.skipIf(!available)("an unknown measured_boot_policy_name with a reference state is an error naming it, not accept-all", () =>
    Effect.gen(function*() {
      const view = yield* enrolled({ mb_policy: REFSTATE })
      expect(yield* pushCompile(view)).toEqual({
        tag: "AgentConfigUnusable",
        agentId: AGENT,
        field: "measured_boot_policy_name",
        reason: "'no-such-policy' is not a measured-boot policy"
      })
    }).pipe(Effect.provide(onStorage(backend, { measured_boot_policy_name: "no-such-policy" }))), 60_000)

  it.live.skipIf(!available)("a runtime policy the agent names that is not stored is a named failure, not an empty policy", () =>
    Effect.gen(function*() {
      const view = yield* enrolled()
      // the policy renamed away between the context read and the load: its checksum is not cached
      const gone = { ...view, runtime_policy_name: "gone-policy", runtime_policy_checksum: "0".repeat(64), runtime_policy_has_policy: true }
      expect(yield* pushCompile(gone)).toEqual({
        tag: "AgentConfigUnusable",
        agentId: AGENT,
        field: "runtime_policy_name",
        reason: "names policy 'gone-policy', which is not stored"
      })
    }).pipe(Effect.provide(onStorage(backend))), 60_000)

  it.live.skipIf(!available)("stored ima_sign_verification_keys that are not a keyring fail closed; a bad tpm_policy names agent and field", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const view = yield* enrolled()
      expect(yield* pushCompile(view)).toEqual("compiled")
      // rows stored by an older, laxer version
      yield* Effect.orDie(sql`UPDATE verifier_agents SET ima_sign_verification_keys = ${"{\"pubkeys\": [\"not a key\"]}"} WHERE agent_id = ${AGENT}`)
      const badKeys = yield* pushCompile(Option.getOrThrow(yield* Effect.orDie((yield* AgentRepo).findView(AGENT))))
      expect(badKeys).toMatchObject({ tag: "AgentConfigUnusable", agentId: AGENT, field: "ima_sign_verification_keys" })
      yield* Effect.orDie(sql`UPDATE verifier_agents SET ima_sign_verification_keys = '', tpm_policy = ${"{\"mask\": \"not a mask\"}"} WHERE agent_id = ${AGENT}`)
      const badTpm = yield* pushCompile(Option.getOrThrow(yield* Effect.orDie((yield* AgentRepo).findView(AGENT))))
      expect(badTpm).toMatchObject({ tag: "AgentConfigUnusable", agentId: AGENT, field: "tpm_policy" })
    }).pipe(Effect.provide(onStorage(backend))), 60_000)
})
