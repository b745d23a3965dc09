/**
 * `verifier_runtime_policies` and `verifier_mb_policies`: named documents with their checksum and
 * the facts rendering needs. Inserts report a name already taken instead of failing; `usedBy` names
 * an agent that references a policy (the foreign keys refuse the delete anyway).
 */
import { SqlClient } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { nowSeconds } from "../../../db/dialect.js"
import { storeError } from "../errors.js"
import { MbPolicyRow, RuntimePolicyRow } from "./rows.js"
import { nextSeq } from "./seq.js"

export interface RuntimePolicyData {
  readonly runtime_policy: string
  readonly tpm_policy: string | null
  readonly checksum: string
  readonly has_policy: boolean
  readonly digest_count: number
}

export interface MbPolicyData {
  readonly mb_policy: string | null
  readonly checksum: string
  readonly has_policy: boolean
  readonly key_count: number
}

const decodeRuntime = Schema.decodeUnknown(RuntimePolicyRow)
const decodeMb = Schema.decodeUnknown(MbPolicyRow)

const RUNTIME_COLUMNS = "name, runtime_policy, tpm_policy, checksum, has_policy, digest_count, created_at, updated_at"
const MB_COLUMNS = "name, mb_policy, checksum, has_policy, key_count, created_at, updated_at"

export class RuntimePolicyRepo extends Effect.Service<RuntimePolicyRepo>()("attest/verifier/RuntimePolicyRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /** True when stored; false when the name is taken. */
    const insert = Effect.fn("RuntimePolicyRepo.insert")(function*(name: string, data: RuntimePolicyData) {
      const now = yield* nowSeconds
      const seq = yield* nextSeq(sql, "verifier_runtime_policies")
      const rows = yield* sql`INSERT INTO verifier_runtime_policies ${
        sql.insert({ name, seq, ...data, has_policy: data.has_policy ? 1 : 0, created_at: now, updated_at: now })
      } ON CONFLICT (name) DO NOTHING RETURNING name`.pipe(Effect.mapError(storeError("insert runtime policy")))
      return rows.length > 0
    })

    /** True when replaced; false for an unknown name. */
    const update = Effect.fn("RuntimePolicyRepo.update")(function*(name: string, data: RuntimePolicyData) {
      const now = yield* nowSeconds
      const rows = yield* sql`UPDATE verifier_runtime_policies SET
          runtime_policy = ${data.runtime_policy}, tpm_policy = ${data.tpm_policy}, checksum = ${data.checksum},
          has_policy = ${data.has_policy ? 1 : 0}, digest_count = ${data.digest_count}, updated_at = ${now}
        WHERE name = ${name} RETURNING name`.pipe(Effect.mapError(storeError("update runtime policy")))
      return rows.length > 0
    })

    const find = Effect.fn("RuntimePolicyRepo.find")(function*(name: string) {
      const rows = yield* sql`SELECT ${sql.literal(RUNTIME_COLUMNS)} FROM verifier_runtime_policies WHERE name = ${name}`.pipe(
        Effect.mapError(storeError("find runtime policy"))
      )
      if (rows.length === 0) return Option.none<RuntimePolicyRow>()
      return Option.some(yield* decodeRuntime(rows[0]).pipe(Effect.mapError(storeError("find runtime policy"))))
    })

    const exists = Effect.fn("RuntimePolicyRepo.exists")(function*(name: string) {
      const rows = yield* sql`SELECT name FROM verifier_runtime_policies WHERE name = ${name}`.pipe(
        Effect.mapError(storeError("find runtime policy"))
      )
      return rows.length > 0
    })

    /** Names in the order they were added. */
    const names = Effect.fn("RuntimePolicyRepo.names")(function*() {
      const rows = yield* sql<{ name: string }>`SELECT name FROM verifier_runtime_policies ORDER BY seq, name`.pipe(
        Effect.mapError(storeError("list runtime policies"))
      )
      return rows.map((r) => String(r.name))
    })

    /** An agent that references the policy, if any. */
    const usedBy = Effect.fn("RuntimePolicyRepo.usedBy")(function*(name: string) {
      const rows = yield* sql<{ agent_id: string }>`SELECT agent_id FROM verifier_agents
        WHERE runtime_policy_name = ${name} ORDER BY seq, agent_id LIMIT 1`.pipe(Effect.mapError(storeError("runtime policy users")))
      return Option.fromNullable(rows[0]?.agent_id).pipe(Option.map(String))
    })

    const remove = Effect.fn("RuntimePolicyRepo.remove")(function*(name: string) {
      const rows = yield* sql`DELETE FROM verifier_runtime_policies WHERE name = ${name} RETURNING name`.pipe(
        Effect.mapError(storeError("delete runtime policy"))
      )
      return rows.length > 0
    })

    return { insert, update, find, exists, names, usedBy, remove } as const
  })
}) {}

export class MbPolicyRepo extends Effect.Service<MbPolicyRepo>()("attest/verifier/MbPolicyRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const insert = Effect.fn("MbPolicyRepo.insert")(function*(name: string, data: MbPolicyData) {
      const now = yield* nowSeconds
      const seq = yield* nextSeq(sql, "verifier_mb_policies")
      const rows = yield* sql`INSERT INTO verifier_mb_policies ${
        sql.insert({ name, seq, ...data, has_policy: data.has_policy ? 1 : 0, created_at: now, updated_at: now })
      } ON CONFLICT (name) DO NOTHING RETURNING name`.pipe(Effect.mapError(storeError("insert mb policy")))
      return rows.length > 0
    })

    const update = Effect.fn("MbPolicyRepo.update")(function*(name: string, data: MbPolicyData) {
      const now = yield* nowSeconds
      const rows = yield* sql`UPDATE verifier_mb_policies SET
          mb_policy = ${data.mb_policy}, checksum = ${data.checksum}, has_policy = ${data.has_policy ? 1 : 0},
          key_count = ${data.key_count}, updated_at = ${now}
        WHERE name = ${name} RETURNING name`.pipe(Effect.mapError(storeError("update mb policy")))
      return rows.length > 0
    })

    const find = Effect.fn("MbPolicyRepo.find")(function*(name: string) {
      const rows = yield* sql`SELECT ${sql.literal(MB_COLUMNS)} FROM verifier_mb_policies WHERE name = ${name}`.pipe(
        Effect.mapError(storeError("find mb policy"))
      )
      if (rows.length === 0) return Option.none<MbPolicyRow>()
      return Option.some(yield* decodeMb(rows[0]).pipe(Effect.mapError(storeError("find mb policy"))))
    })

    const exists = Effect.fn("MbPolicyRepo.exists")(function*(name: string) {
      const rows = yield* sql`SELECT name FROM verifier_mb_policies WHERE name = ${name}`.pipe(
        Effect.mapError(storeError("find mb policy"))
      )
      return rows.length > 0
    })

    const names = Effect.fn("MbPolicyRepo.names")(function*() {
      const rows = yield* sql<{ name: string }>`SELECT name FROM verifier_mb_policies ORDER BY seq, name`.pipe(
        Effect.mapError(storeError("list mb policies"))
      )
      return rows.map((r) => String(r.name))
    })

    const usedBy = Effect.fn("MbPolicyRepo.usedBy")(function*(name: string) {
      const rows = yield* sql<{ agent_id: string }>`SELECT agent_id FROM verifier_agents
        WHERE mb_policy_name = ${name} ORDER BY seq, agent_id LIMIT 1`.pipe(Effect.mapError(storeError("mb policy users")))
      return Option.fromNullable(rows[0]?.agent_id).pipe(Option.map(String))
    })

    const remove = Effect.fn("MbPolicyRepo.remove")(function*(name: string) {
      const rows = yield* sql`DELETE FROM verifier_mb_policies WHERE name = ${name} RETURNING name`.pipe(
        Effect.mapError(storeError("delete mb policy"))
      )
      return rows.length > 0
    })

    return { insert, update, find, exists, names, usedBy, remove } as const
  })
}) {}
