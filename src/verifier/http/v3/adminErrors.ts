/**
 * The v2 domain's errors as API 3.0 errors (JSON:API, push-model.md §1.1): a refused field is 422
 * `invalid_resource_data` with its `source.pointer`; unknown resources 404 `not_found`; a taken
 * name, a policy in use or an agent being deleted 409 `conflict`; a database that does not answer
 * 503. Where the fact is a field of the request document (an unknown policy named by an agent, a
 * taken id), the error points at it. Pure: AdminHttp.ts wraps these in the response.
 */
import type { JsonApiError } from "../../../http/jsonapi.js"
import { isTransientSqlError } from "../../../db/transient.js"
import type { VerifierDomainError } from "../v2/httpErrors.js"
import { resourceError } from "./documents.js"

/** What the request was about: an agent creation (its id is in the document), an agent, or a policy. */
export type AdminOperation = "agentCreate" | "agent" | "imaPolicy" | "uefiRefstate"

const attribute = (field: string) => (field === "body" ? "/data/attributes" : `/data/attributes/${field}`)

const err = (status: number, code: string, detail: string, pointer?: string): JsonApiError => ({
  status: String(status),
  code,
  detail,
  ...(pointer === undefined ? {} : { source: { pointer } })
})

export const adminErrorOf = (operation: AdminOperation, e: VerifierDomainError): JsonApiError => {
  const onAgent = operation === "agent" || operation === "agentCreate"
  switch (e._tag) {
    case "InvalidAgentId":
      // an id in the path that cannot be an agent id names no agent
      return operation === "agentCreate" ? resourceError("/data/id", e.reason) : err(404, "not_found", `No enrolled agent with ID '${e.agentId}'.`)
    case "InvalidAgentBody":
      return e.field === "agent_id" ? resourceError("/data/id", e.reason) : resourceError(attribute(e.field), e.reason)
    case "AgentAlreadyExists":
      return err(409, "conflict", `Agent '${e.agentId}' already exists. Delete it or change it with PATCH.`, "/data/id")
    case "AgentNotFound":
      return err(404, "not_found", `No enrolled agent with ID '${e.agentId}'.`)
    case "AgentOfOtherVerifier":
      return err(404, "not_found", `Agent '${e.agentId}' is attested by verifier '${e.verifierId}', not this one.`)
    case "AgentBeingDeleted":
      return err(409, "conflict", `Agent '${e.agentId}' is being deleted.`)
    case "InvalidPolicyName":
      return resourceError("/data/id", e.reason)
    case "RuntimePolicyNotFound":
      return onAgent
        ? err(404, "not_found", `No IMA policy named '${e.name}'.`, "/data/attributes/runtime_policy_name")
        : err(404, "not_found", `No IMA policy named '${e.name}'.`)
    case "RuntimePolicyExists":
      return err(409, "conflict", `An IMA policy named '${e.name}' already exists.`, onAgent ? "/data/attributes/runtime_policy_name" : "/data/id")
    case "RuntimePolicyInUse":
      return err(409, "conflict", `IMA policy '${e.name}' is in use by agent '${e.agentId}'.`)
    case "InvalidRuntimePolicy":
      return resourceError(attribute(e.field), e.reason)
    case "MbPolicyNotFound":
      return onAgent
        ? err(404, "not_found", `No UEFI reference state named '${e.name}'.`, "/data/attributes/mb_policy_name")
        : err(404, "not_found", `No UEFI reference state named '${e.name}'.`)
    case "MbPolicyExists":
      return err(409, "conflict", `A UEFI reference state named '${e.name}' already exists.`, onAgent ? "/data/attributes/mb_policy_name" : "/data/id")
    case "MbPolicyInUse":
      return err(409, "conflict", `UEFI reference state '${e.name}' is in use by agent '${e.agentId}'.`)
    case "InvalidMbPolicy":
      return resourceError(attribute(e.field), e.reason)
    case "VerifierStoreError":
      return isTransientSqlError(e.cause)
        ? err(503, "service_unavailable", "The verifier's database is momentarily unavailable; try again.")
        : err(500, "internal_error", e.message)
  }
}
