/**
 * Which runner's loop last took a pull agent (issue 24, cluster mode): the runner address
 * (`cluster_runner_host:cluster_runner_port`) written beside the owner epoch when a loop takes it,
 * so the status, the dashboard and `attest verifier cluster status` show who polls each agent from
 * the verifier's own table. NULL in single-process mode and before a loop took the agent.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

const migration = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE verifier_agents ADD COLUMN owner_runner TEXT`
})

export default migration
