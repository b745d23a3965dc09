/**
 * Deleting an agent: its row and the policies stored under its id that no other agent uses, in one
 * transaction. Shared by DELETE (Agents.remove) and the loop that finds its agent TERMINATED.
 */
import type { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { storeError } from "../errors.js"
import type { AgentRepo } from "./AgentRepo.js"
import type { MbPolicyRepo, RuntimePolicyRepo } from "./PolicyRepo.js"
import { inTransaction } from "../../../db/transaction.js"

/** True when the agent was there and is now gone. */
export const removeAgentAndOwnPolicies = (
  deps: { readonly sql: SqlClient.SqlClient; readonly agents: AgentRepo; readonly runtimePolicies: RuntimePolicyRepo; readonly mbPolicies: MbPolicyRepo },
  agentId: string
) =>
  inTransaction(deps.sql, Effect.gen(function*() {
    const removed = yield* deps.agents.remove(agentId)
    if (!removed) return false
    if (Option.isNone(yield* deps.runtimePolicies.usedBy(agentId))) yield* deps.runtimePolicies.remove(agentId)
    if (Option.isNone(yield* deps.mbPolicies.usedBy(agentId))) yield* deps.mbPolicies.remove(agentId)
    return true
  })).pipe(Effect.catchTag("SqlError", (e) => Effect.fail(storeError("delete agent")(e))))
