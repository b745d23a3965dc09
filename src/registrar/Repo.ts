/**
 * The registrar's table (`registrar_agents`, migration in src/db/migrations/). Byte fields are
 * stored as the base64 text the agent sent, so a record echoes exactly what was registered and the
 * same SQL serves SQLite and PostgreSQL. `challenge_key` is Keylime's `key`: base64 of the secret
 * wrapped by MakeCredential, the HMAC key of the activation check.
 */
import { SqlClient, type SqlError } from "@effect/sql"
import { Data, Effect, Option, Schema } from "effect"
import { Base64 } from "../../schemas/Common.js"
import { DbBoolean, DbInteger } from "../db/dialect.js"

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
  regcount: DbInteger
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
  readonly cause?: unknown
}> {}

export type ReRegistration =
  | { readonly _tag: "Updated"; readonly regcount: number }
  | { readonly _tag: "DifferentIdentity" }
  | { readonly _tag: "Missing" }

const decodeRow = Schema.decodeUnknown(RegistrationRow)

const COLUMNS = "agent_id, ek_tpm, ekcert, aik_tpm, ip, port, mtls_cert, challenge_key, active, regcount"

export class RegistrarRepo extends Effect.Service<RegistrarRepo>()("attest/registrar/RegistrarRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const fail = (operation: string) => (cause: SqlError.SqlError | unknown) =>
      new RepoError({ operation, message: `registrar database: ${operation} failed`, cause })
    const now = () => new Date().toISOString()

    const find = Effect.fn("RegistrarRepo.find")(function*(agentId: string) {
      const rows = yield* sql`SELECT ${sql.literal(COLUMNS)} FROM registrar_agents WHERE agent_id = ${agentId}`.pipe(
        Effect.mapError(fail("find"))
      )
      if (rows.length === 0) return Option.none<RegistrationRow>()
      return Option.some(yield* decodeRow(rows[0]).pipe(Effect.mapError(fail("find"))))
    })

    /** New registration; None when the id exists already (a concurrent registration won). */
    const insert = Effect.fn("RegistrarRepo.insert")(function*(data: RegistrationData) {
      const rows = yield* sql`INSERT INTO registrar_agents ${
        sql.insert({ ...data, active: 0, regcount: 1, registered_at: now(), updated_at: now() })
      } ON CONFLICT (agent_id) DO NOTHING RETURNING agent_id`.pipe(Effect.mapError(fail("insert")))
      return rows.length > 0
    })

    /**
     * Same TPM identity again: new challenge and contact data, deactivated until the new blob is
     * activated, regcount + 1. A different EK or AK under the id is refused (the row is untouched).
     */
    const reRegister = Effect.fn("RegistrarRepo.reRegister")(function*(data: RegistrationData) {
      const rows = yield* sql`UPDATE registrar_agents SET
          ekcert = ${data.ekcert}, ip = ${data.ip}, port = ${data.port}, mtls_cert = ${data.mtls_cert},
          challenge_key = ${data.challenge_key}, active = 0, regcount = regcount + 1, updated_at = ${now()}
        WHERE agent_id = ${data.agent_id} AND ek_tpm = ${data.ek_tpm} AND aik_tpm = ${data.aik_tpm}
        RETURNING regcount`.pipe(Effect.mapError(fail("re-register")))
      if (rows.length > 0) {
        return { _tag: "Updated", regcount: Number((rows[0] as { regcount: unknown }).regcount) } as ReRegistration
      }
      const existing = yield* find(data.agent_id)
      return (Option.isSome(existing) ? { _tag: "DifferentIdentity" } : { _tag: "Missing" }) as ReRegistration
    })

    /** Marks active only if the challenge is still the one checked (a re-registration may have raced). */
    const activate = Effect.fn("RegistrarRepo.activate")(function*(agentId: string, challengeKey: string) {
      const rows = yield* sql`UPDATE registrar_agents SET active = 1, updated_at = ${now()}
        WHERE agent_id = ${agentId} AND challenge_key = ${challengeKey} RETURNING agent_id`.pipe(
        Effect.mapError(fail("activate"))
      )
      return rows.length > 0
    })

    const remove = Effect.fn("RegistrarRepo.remove")(function*(agentId: string) {
      const rows = yield* sql`DELETE FROM registrar_agents WHERE agent_id = ${agentId} RETURNING agent_id`.pipe(
        Effect.mapError(fail("delete"))
      )
      return rows.length > 0
    })

    /** Every registered id, activated or not (Keylime lists both), in code-unit order on both backends. */
    const listIds = Effect.fn("RegistrarRepo.listIds")(function*() {
      const rows = yield* sql<{ agent_id: string }>`SELECT agent_id FROM registrar_agents`.pipe(
        Effect.mapError(fail("list"))
      )
      return rows.map((r) => String(r.agent_id)).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
    })

    return { find, insert, reRegister, activate, remove, listIds } as const
  })
}) {}
