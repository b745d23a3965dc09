/**
 * AgentAdmin.update (PATCH /v3/agents/:id) on SQLite and PostgreSQL, below HTTP: the change is
 * merged over the stored configuration (fields not given, the revocation key included, stay as
 * they are), `generation` is bumped and an active pull agent's loop restarted; an agent being
 * deleted is refused; a refused change stores nothing.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Option, Redacted } from "effect"
import * as crypto from "node:crypto"
import { AgentAdmin } from "../../src/verifier/domain/AgentAdmin.js"
import { Agents } from "../../src/verifier/domain/Agents.js"
import { AgentRepo } from "../../src/verifier/domain/repo/AgentRepo.js"
import { OperationalState } from "../../src/attestation/states.js"
import { testDatabase } from "../support/db.js"
import { backends, recordingPoller, snapshotTables, validBody, verifierLayer } from "./support.js"

const ID = "d432fbb3-d2f1-4a97-9ef7-75bd81c000aa"
const revocationKey = crypto.generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({ type: "pkcs8", format: "pem" }).toString()

for (const [backend, available] of backends) {
  describe.skipIf(!available)(`AgentAdmin.update on ${backend}`, () => {
    it.scoped("merges over the stored configuration, bumps generation, restarts an active pull loop; refuses an agent being deleted", () => {
      const poller = recordingPoller()
      return Effect.gen(function*() {
        const db = yield* testDatabase(backend)
        yield* Effect.gen(function*() {
          const agents = yield* Agents
          const admin = yield* AgentAdmin
          const repo = yield* AgentRepo
          yield* agents.add(ID, { ...validBody(), revocation_key: revocationKey })
          const before = Option.getOrThrow(yield* repo.find(ID))
          poller.calls.length = 0
          // nothing to change: no write, the loop left alone
          yield* admin.update(ID, {})
          expect([Option.getOrThrow(yield* repo.find(ID)).generation, poller.calls]).toEqual([before.generation, []])

          const record = yield* admin.update(ID, { accept_tpm_signing_algs: ["rsassa"], cloudagent_ip: "10.0.0.7" })
          expect([record.view.accept_tpm_signing_algs, record.view.ip, record.view.port, record.view.tpm_policy]).toEqual([["rsassa"], "10.0.0.7", before.port, before.tpm_policy])
          const after = Option.getOrThrow(yield* repo.find(ID))
          expect([Redacted.value(after.revocation_key), after.ak_tpm, after.v, after.mtls_cert, after.generation]).toEqual([
            revocationKey,
            before.ak_tpm,
            before.v,
            before.mtls_cert,
            before.generation + 1
          ])
          expect(poller.calls).toEqual([{ op: "start", agentId: ID }])

          // refused: nothing stored, the loop left alone
          const tables = yield* snapshotTables
          const refused = yield* Effect.either(admin.update(ID, { accept_tpm_signing_algs: ["rsassa"], revocation_key: "not a key" }))
          expect(Either.isLeft(refused) && refused.left._tag === "InvalidAgentBody" ? refused.left.field : refused).toEqual("revocation_key")
          expect(yield* snapshotTables).toEqual(tables)
          expect(poller.calls.length).toEqual(1)

          const sql = yield* SqlClient.SqlClient
          yield* sql`UPDATE verifier_agents SET operational_state = ${OperationalState.TERMINATED} WHERE agent_id = ${ID}`
          const deleting = yield* Effect.either(admin.update(ID, { tpm_policy: "{}" }))
          expect(Either.isLeft(deleting) ? deleting.left._tag : deleting).toEqual("AgentBeingDeleted")
        }).pipe(Effect.provide(AgentAdmin.Default), Effect.provide(verifierLayer(db, {}, poller.layer)))
      })
    }, 60_000)
  })
}
