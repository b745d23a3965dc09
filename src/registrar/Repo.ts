/**
 * The registrar's table (`registrar_agents`, migrations in src/db/migrations/). Byte fields are
 * stored as the base64 text the agent sent, so a record echoes exactly what was registered and the
 * same SQL serves SQLite and PostgreSQL. `challenge_key` is Keylime's `key`: base64 of the secret
 * wrapped by MakeCredential, the HMAC key of the activation check.
 *
 * A re-registration of an active agent is staged in the `pending_*` columns; the active columns
 * change only when that challenge is answered (`promote`). Every write is one conditional UPDATE
 * or DELETE naming the challenge it was decided on, so a registration racing an activation on
 * either backend ends in one consistent row, never a mix of two registrations. A statement that
 * fails because the database was momentarily unreachable is tried once more (src/db/transient.ts).
 */
import { SqlClient, type SqlError } from "@effect/sql"
import { Clock, Data, Effect, Option, Schema } from "effect"
import { Base64 } from "../../schemas/Common.js"
import { DbBoolean, DbInteger } from "../db/dialect.js"
import { isTransientSqlError, retryTransient } from "../db/transient.js"

export class RegistrationRow extends Schema.Class<RegistrationRow>("RegistrationRow")({
  agent_id: Schema.String,
  ek_tpm: Base64,
  ekcert: Schema.NullOr(Base64),
  aik_tpm: Base64,
  ip: Schema.NullOr(Schema.String),
  port: Schema.NullOr(DbInteger),
  mtls_cert: Schema.NullOr(Schema.String),
  challenge_key: Schema.String,
  active: DbBoolean,
  regcount: DbInteger,
  /** The challenge of a staged re-registration of an active agent; null when nothing is staged. */
  pending_challenge_key: Schema.NullOr(Schema.String)
}) {}

/** What a registration writes (regcount and active are the repository's business). */
export interface RegistrationData {
  readonly agent_id: string
  readonly ek_tpm: string
  readonly ekcert: string | null
  readonly aik_tpm: string
  readonly ip: string | null
  readonly port: number | null
  readonly mtls_cert: string | null
  readonly challenge_key: string
}

export class RepoError extends Data.TaggedError("RepoError")<{
  readonly operation: string
  readonly message: string
  /** The database was momentarily unreachable (still so after one retry): worth trying again later. */
  readonly transient: boolean
  readonly cause?: unknown
}> {}

export type ReRegistration =
  /** Not yet activated: the registration was replaced in place (regcount + 1). */
  | { readonly _tag: "Replaced"; readonly regcount: number }
  /** Active: the new registration waits for its activation; the active record is unchanged. */
  | { readonly _tag: "Staged" }
  | { readonly _tag: "DifferentIdentity" }
  | { readonly _tag: "Missing" }

const decodeRow = Schema.decodeUnknown(RegistrationRow)

const COLUMNS = "agent_id, ek_tpm, ekcert, aik_tpm, ip, port, mtls_cert, challenge_key, active, regcount, pending_challenge_key"

const CLEAR_PENDING =
  "pending_challenge_key = NULL, pending_ekcert = NULL, pending_ip = NULL, pending_port = NULL, pending_mtls_cert = NULL, pending_at = NULL"

export class RegistrarRepo extends Effect.Service<RegistrarRepo>()("attest/registrar/RegistrarRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const fail = (operation: string) => (cause: SqlError.SqlError | unknown) =>
      new RepoError({ operation, message: `registrar database: ${operation} failed`, transient: isTransientSqlError(cause), cause })
    const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms).toISOString())
    const changed = (rows: ReadonlyArray<unknown>) => rows.length > 0

    const find = Effect.fn("RegistrarRepo.find")(function*(agentId: string) {
      const rows = yield* sql`SELECT ${sql.literal(COLUMNS)} FROM registrar_agents WHERE agent_id = ${agentId}`.pipe(
        retryTransient,
        Effect.mapError(fail("find"))
      )
      if (rows.length === 0) return Option.none<RegistrationRow>()
      return Option.some(yield* decodeRow(rows[0]).pipe(Effect.mapError(fail("find"))))
    })

    /** New registration; false when the id exists already (a concurrent registration won). */
    const insert = Effect.fn("RegistrarRepo.insert")(function*(data: RegistrationData) {
      const at = yield* now
      const rows = yield* sql`INSERT INTO registrar_agents ${
        sql.insert({ ...data, active: 0, regcount: 1, registered_at: at, updated_at: at })
      } ON CONFLICT (agent_id) DO NOTHING RETURNING agent_id`.pipe(retryTransient, Effect.mapError(fail("insert")))
      return changed(rows)
    })

    /**
     * Same TPM identity again. Not yet activated: new challenge and contact data in place,
     * regcount + 1. Active: staged in the pending columns (replacing an earlier staged one); the
     * active record is untouched. A different EK or AK under the id is refused (nothing changes).
     * Inactive first: a row only goes from inactive to active, so the second UPDATE catches one that
     * was activated in between.
     */
    const reRegister = Effect.fn("RegistrarRepo.reRegister")(function*(data: RegistrationData) {
      const at = yield* now
      const same = sql`agent_id = ${data.agent_id} AND ek_tpm = ${data.ek_tpm} AND aik_tpm = ${data.aik_tpm}`
      const replaced = yield* sql`UPDATE registrar_agents SET
          ekcert = ${data.ekcert}, ip = ${data.ip}, port = ${data.port}, mtls_cert = ${data.mtls_cert},
          challenge_key = ${data.challenge_key}, regcount = regcount + 1, updated_at = ${at}
        WHERE ${same} AND active = 0
        RETURNING regcount`.pipe(retryTransient, Effect.mapError(fail("re-register")))
      if (replaced.length > 0) {
        return { _tag: "Replaced", regcount: Number((replaced[0] as { regcount: unknown }).regcount) } as ReRegistration
      }
      const staged = yield* sql`UPDATE registrar_agents SET
          pending_challenge_key = ${data.challenge_key}, pending_ekcert = ${data.ekcert}, pending_ip = ${data.ip},
          pending_port = ${data.port}, pending_mtls_cert = ${data.mtls_cert}, pending_at = ${at}
        WHERE ${same} AND active = 1
        RETURNING agent_id`.pipe(retryTransient, Effect.mapError(fail("stage re-registration")))
      if (changed(staged)) return { _tag: "Staged" } as ReRegistration
      const existing = yield* find(data.agent_id)
      return (Option.isSome(existing) ? { _tag: "DifferentIdentity" } : { _tag: "Missing" }) as ReRegistration
    })

    /** First activation: marks active only if the challenge is still the one checked. */
    const activate = Effect.fn("RegistrarRepo.activate")(function*(agentId: string, challengeKey: string) {
      const rows = yield* sql`UPDATE registrar_agents SET active = 1, updated_at = ${yield* now}
        WHERE agent_id = ${agentId} AND active = 0 AND challenge_key = ${challengeKey} RETURNING agent_id`.pipe(
        retryTransient,
        Effect.mapError(fail("activate"))
      )
      return changed(rows)
    })

    /** The staged registration becomes the active record, if it is still the one checked. */
    const promote = Effect.fn("RegistrarRepo.promote")(function*(agentId: string, pendingKey: string) {
      const rows = yield* sql`UPDATE registrar_agents SET
          ekcert = pending_ekcert, ip = pending_ip, port = pending_port, mtls_cert = pending_mtls_cert,
          challenge_key = pending_challenge_key, regcount = regcount + 1, updated_at = ${yield* now},
          ${sql.literal(CLEAR_PENDING)}
        WHERE agent_id = ${agentId} AND pending_challenge_key = ${pendingKey} RETURNING regcount`.pipe(
        retryTransient,
        Effect.mapError(fail("promote re-registration"))
      )
      return rows.length > 0 ? Option.some(Number((rows[0] as { regcount: unknown }).regcount)) : Option.none<number>()
    })

    /** Removes a registration that was never activated (failed first activation); never an active one. */
    const removeUnactivated = Effect.fn("RegistrarRepo.removeUnactivated")(function*(agentId: string, challengeKey: string) {
      const rows = yield* sql`DELETE FROM registrar_agents
        WHERE agent_id = ${agentId} AND active = 0 AND challenge_key = ${challengeKey} RETURNING agent_id`.pipe(
        retryTransient,
        Effect.mapError(fail("delete"))
      )
      return changed(rows)
    })

    /** Admin delete: whatever the state. */
    const remove = Effect.fn("RegistrarRepo.remove")(function*(agentId: string) {
      const rows = yield* sql`DELETE FROM registrar_agents WHERE agent_id = ${agentId} RETURNING agent_id`.pipe(
        retryTransient,
        Effect.mapError(fail("delete"))
      )
      return changed(rows)
    })

    /** Every registered id, activated or not (Keylime lists both), in code-unit order on both backends. */
    const listIds = Effect.fn("RegistrarRepo.listIds")(function*() {
      const rows = yield* sql<{ agent_id: string }>`SELECT agent_id FROM registrar_agents`.pipe(
        retryTransient,
        Effect.mapError(fail("list"))
      )
      return rows.map((r) => String(r.agent_id)).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
    })

    return { find, insert, reRegister, activate, promote, removeUnactivated, remove, listIds } as const
  })
}) {}
