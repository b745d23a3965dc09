import { SqlClient } from "@effect/sql"
import { Effect, Layer, Option } from "effect"
import { DbLive } from "../src/db/Sql.js"
import { VerifierConfig } from "../src/config/services.js"
import { AgentRepo } from "../src/verifier/domain/repo/AgentRepo.js"
import { MbPolicyRepo, RuntimePolicyRepo } from "../src/verifier/domain/repo/PolicyRepo.js"
import { EMPTY_MB_POLICY } from "../src/verifier/domain/policy/mbUpload.js"
import { emptyRuntimePolicyData } from "../src/verifier/domain/policy/runtimeUpload.js"
import { makeLoopWriteBatcher, storeBatch } from "../src/verifier/pull/writeBatch.js"
import Pg from "pg"

const url = "postgres://postgres@127.0.0.1:5432/test"
const schema = `s_${Math.random().toString(36).slice(2, 8)}`
const admin = new Pg.Pool({ connectionString: url, max: 1 })
await admin.query(`CREATE SCHEMA ${schema}`)
const N = 100
const ROUNDS = 10
const prog = (window: number) => Effect.gen(function*() {
  const repo = yield* AgentRepo
  const batcher = yield* makeLoopWriteBatcher
  const t0 = process.cpuUsage(); const w0 = Date.now()
  for (let r = 0; r < ROUNDS; r++) {
    yield* Effect.all(Array.from({ length: N }, (_, i) => batcher.submit({ agentId: `a${i}`, write: repo.recordVerdict(`a${i}`, { generation: 0, ownerEpoch: 1 }, { operationalState: 3, valid: true, receivedAt: 1, evaluationState: null, nextPollAt: 3 }) })), { concurrency: "unbounded" }).pipe(Effect.withTracerEnabled(false))
  }
  const c = process.cpuUsage(t0)
  console.log(`window ${window}: ${((c.user + c.system) / 1000 / (N * ROUNDS)).toFixed(3)} ms CPU per write, wall ${Date.now() - w0} ms`)
}).pipe(Effect.scoped, Effect.provide(AgentRepo.Default), Effect.provide(Layer.mergeAll(VerifierConfig.test({ database_write_batch_window: window }))))

const setup = Effect.gen(function*() {
  yield* (yield* RuntimePolicyRepo).insert("p", emptyRuntimePolicyData().data)
  yield* (yield* MbPolicyRepo).insert("p", EMPTY_MB_POLICY)
  const repo = yield* AgentRepo
  for (let i = 0; i < N; i++) {
    yield* repo.insert({ agent_id: `a${i}`, verifier_id: "default", operational_state: 3, v: null, ip: "127.0.0.1", port: 1, tpm_policy: "{}", vtpm_policy: null, meta_data: "{}", ak_tpm: "A", mtls_cert: null, runtime_policy_name: "p", mb_policy_name: "p", ima_sign_verification_keys: "", revocation_key: "", accept_tpm_hash_algs: [], accept_tpm_encryption_algs: [], accept_tpm_signing_algs: [], supported_version: null })
    yield* repo.takeOwnership(`a${i}`, "default")
  }
}).pipe(Effect.provide(Layer.mergeAll(AgentRepo.Default, RuntimePolicyRepo.Default, MbPolicyRepo.Default)))

const db = DbLive({ database_url: `${url}?options=-c%20search_path%3D${schema}`, data_dir: "" }, "verifier")
await Effect.runPromise(Effect.gen(function*() {
  yield* setup
  for (const w of [0, 0.05, 0, 0.05]) yield* prog(w)
  const sql = yield* SqlClient.SqlClient
  const repo = yield* Effect.provide(AgentRepo, AgentRepo.Default)
  const t0 = process.cpuUsage(); const w0 = Date.now()
  for (let r = 0; r < ROUNDS; r++) yield* storeBatch(sql, Array.from({ length: N }, (_, i) => ({ agentId: `a${i}`, write: repo.recordVerdict(`a${i}`, { generation: 0, ownerEpoch: 1 }, { operationalState: 3, valid: true, receivedAt: 1, evaluationState: null, nextPollAt: 3 }) })))
  const c = process.cpuUsage(t0)
  console.log(`storeBatch direct: ${((c.user + c.system) / 1000 / (N * ROUNDS)).toFixed(3)} ms CPU per write, wall ${Date.now() - w0} ms`)
}).pipe(Effect.provide(db)))
await admin.query(`DROP SCHEMA ${schema} CASCADE`); await admin.end()
