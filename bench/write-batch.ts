/**
 * The pull loops' write batch (src/verifier/pull/writeBatch.ts) in one process on PostgreSQL:
 * 100 agents' verdict writes submitted at once, 10 rounds, alternately each alone
 * (`database_write_batch_window = 0`) and batched (0.05 s), twice: the process's CPU per write and
 * the wall time; then the same batches through `storeBatch` directly (no queue). What the batch
 * saves is mostly the server's (one commit per batch); this shows what it costs the runner.
 *
 *   npm run bench -- write-batch
 * PostgreSQL: ATTEST_TEST_PG_URL or postgres://postgres@127.0.0.1:5432/test (a schema of its own).
 */
import { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import { loadavg } from "node:os"
import Pg from "pg"
import { VerifierConfig } from "../src/config/services.js"
import { DbLive } from "../src/db/Sql.js"
import { EMPTY_MB_POLICY } from "../src/verifier/domain/policy/mbUpload.js"
import { emptyRuntimePolicyData } from "../src/verifier/domain/policy/runtimeUpload.js"
import { AgentRepo } from "../src/verifier/domain/repo/AgentRepo.js"
import { MbPolicyRepo, RuntimePolicyRepo } from "../src/verifier/domain/repo/PolicyRepo.js"
import { type LoopWriteJob, makeLoopWriteBatcher, storeBatch } from "../src/verifier/pull/writeBatch.js"
import { withSearchPath } from "../test/support/db.js"
import { postgresUrl } from "../test/support/requirements.js"

const N = 100
const ROUNDS = 10

const jobs = (repo: AgentRepo): Array<LoopWriteJob> =>
  Array.from({ length: N }, (_, i) => ({
    agentId: `a${i}`,
    write: repo.recordVerdict(`a${i}`, { generation: 0, ownerEpoch: 1 }, { operationalState: 3, valid: true, receivedAt: 1, evaluationState: null, nextPollAt: 3 })
  }))

/** CPU ms per write and wall ms of `rounds` of N writes. */
const timed = <E, R>(label: string, round: Effect.Effect<unknown, E, R>) =>
  Effect.gen(function*() {
    const cpu0 = process.cpuUsage()
    const t0 = performance.now()
    for (let r = 0; r < ROUNDS; r++) yield* round
    const c = process.cpuUsage(cpu0)
    const perWrite = (c.user + c.system) / 1000 / (N * ROUNDS)
    console.log(`${label.padEnd(16)} ${perWrite.toFixed(3)} ms CPU per write, ${(performance.now() - t0).toFixed(0)} ms for ${N * ROUNDS} writes`)
    return perWrite
  })

const viaBatcher = (window: number) =>
  Effect.gen(function*() {
    const repo = yield* AgentRepo
    const batcher = yield* makeLoopWriteBatcher
    return yield* timed(window === 0 ? "alone" : "batched", Effect.all(jobs(repo).map(batcher.submit), { concurrency: "unbounded" }))
  }).pipe(Effect.scoped, Effect.provide(VerifierConfig.test({ database_write_batch_window: window, database_write_batch_max: N })), Effect.withTracerEnabled(false))

const setup = Effect.gen(function*() {
  yield* (yield* RuntimePolicyRepo).insert("p", emptyRuntimePolicyData().data)
  yield* (yield* MbPolicyRepo).insert("p", EMPTY_MB_POLICY)
  const repo = yield* AgentRepo
  for (let i = 0; i < N; i++) {
    yield* repo.insert({
      agent_id: `a${i}`, verifier_id: "default", operational_state: 3, v: null, ip: "127.0.0.1", port: 1, tpm_policy: "{}", vtpm_policy: null,
      meta_data: "{}", ak_tpm: "A", mtls_cert: null, runtime_policy_name: "p", mb_policy_name: "p", ima_sign_verification_keys: "", revocation_key: "",
      accept_tpm_hash_algs: [], accept_tpm_encryption_algs: [], accept_tpm_signing_algs: [], supported_version: null
    })
    yield* repo.takeOwnership(`a${i}`, "default")
  }
})

const main = Effect.gen(function*() {
  console.log(`write-batch: ${N} writes at once, ${ROUNDS} rounds per figure, load ${loadavg().map((l) => l.toFixed(1)).join(" ")}`)
  yield* setup
  const figures = { alone: [] as Array<number>, batched: [] as Array<number> }
  for (let i = 0; i < 2; i++) {
    figures.alone.push(yield* viaBatcher(0))
    figures.batched.push(yield* viaBatcher(0.05))
  }
  const sql = yield* SqlClient.SqlClient
  const repo = yield* AgentRepo
  const direct = yield* timed("storeBatch only", storeBatch(sql, jobs(repo)))
  const alone = Math.min(...figures.alone)
  const batched = Math.min(...figures.batched)
  console.log(`batched / alone ${(batched / alone).toFixed(2)}; storeBatch only / alone ${(direct / alone).toFixed(2)} (best of two each)`)
  console.log(`BENCH write_batch_cpu_ratio_to_alone ${(batched / alone).toFixed(3)}`)
}).pipe(Effect.provide(Layer.mergeAll(AgentRepo.Default, RuntimePolicyRepo.Default, MbPolicyRepo.Default)))

const schema = `b_${Math.random().toString(36).slice(2, 10)}`
const admin = new Pg.Pool({ connectionString: postgresUrl, max: 1 })
await admin.query(`CREATE SCHEMA ${schema}`)
try {
  await Effect.runPromise(main.pipe(Effect.provide(DbLive({ database_url: withSearchPath(postgresUrl, schema), data_dir: "" }, "verifier"))))
} finally {
  await admin.query(`DROP SCHEMA ${schema} CASCADE`)
  await admin.end()
}
