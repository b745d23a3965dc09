/**
 * The facts of a pull agent's last verdict (JSON: time, nonce, failure types, which checks ran,
 * whether the severity policy stops polling), written with each verdict by the pull loop, so the
 * verifier can sign its EAR when a relying party asks (GET /v3/agents/<id>/attestations/latest with
 * Accept: application/eat+jwt) instead of signing every verdict. Null until the first verdict.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

const migration = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE verifier_agents ADD COLUMN last_verdict TEXT`
})

export default migration
