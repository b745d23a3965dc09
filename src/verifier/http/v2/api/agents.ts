/**
 * The verifier's agent endpoints (spec §4.1, keylime-wire.md §1.4), served under every 2.x prefix.
 * The creation body is declared with its Schema for clients and the OpenAPI document; the server
 * reads it raw (src/verifier/http/v2/Http.ts → agentBody.ts) so that refusals keep Keylime's order and texts.
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import {
  BadRequestE,
  ConflictE,
  Empty,
  Envelope,
  ForbiddenE,
  InternalErrorE,
  NotFoundE,
  OutcomeEnvelope,
  ServiceUnavailableE,
  UnauthorizedE
} from "../../../../../schemas/Envelope.js"
import { VersionInfo } from "../../../../../schemas/Registrar.js"
import { AgentCreateBody, AgentListQuery, AgentListResults, AnyAgentStatus } from "../../../../../schemas/Verifier.js"
import { V2Authorization } from "../../authorization.js"

/** Any text: the handler checks the id (400 "agent_id not valid: …", texts.ts badAgentId). */
export const AgentPath = Schema.Struct({ agent_id: Schema.String })

/** Public, unversioned: the versions this verifier serves. */
export class VerifierVersionGroup extends HttpApiGroup.make("version")
  .add(HttpApiEndpoint.get("version", "/version").addSuccess(Envelope(VersionInfo)).annotate(OpenApi.Summary, "API versions served (public)"))
  .add(HttpApiEndpoint.get("versions", "/versions").addSuccess(Envelope(VersionInfo)).annotate(OpenApi.Summary, "API versions served (public; Keylime's alias)"))
  .addError(BadRequestE)
  .addError(ForbiddenE)
  .middleware(V2Authorization)
{}

export class VerifierAgentsGroup extends HttpApiGroup.make("agents")
  .add(
    HttpApiEndpoint.get("list", "/agents")
      .setUrlParams(AgentListQuery)
      .addSuccess(Envelope(AgentListResults))
      .annotate(
        OpenApi.Summary,
        "List agent ids as `uuids` (1-element lists); `?verifier=<id>` keeps one verifier's agents (empty: all); `?bulk` (any value, Keylime's tenant sends `True`) answers every agent's status by id (admin)"
      )
  )
  .add(
    HttpApiEndpoint.get("show", "/agents/:agent_id")
      .setPath(AgentPath)
      .addSuccess(Envelope(AnyAgentStatus))
      .annotate(OpenApi.Summary, "An agent's status: the 2.5 shape from API 2.5, the earlier documented one for 2.0–2.4 (admin, or the agent itself)")
  )
  .add(
    HttpApiEndpoint.post("add", "/agents/:agent_id")
      .setPath(AgentPath)
      .setPayload(AgentCreateBody)
      .addSuccess(Envelope(Empty))
      .annotate(OpenApi.Summary, "Add an agent to attest, with its policies (inline or by name); polling starts at once in pull mode (admin)")
  )
  .add(
    HttpApiEndpoint.del("remove", "/agents/:agent_id")
      .setPath(AgentPath)
      .addSuccess(OutcomeEnvelope("deleted", 200, "Success"))
      .addSuccess(OutcomeEnvelope("terminating", 202, "Accepted"))
      .annotate(OpenApi.Summary, "Delete an agent: 200 when removed now, 202 when marked TERMINATED (8) for the verifier process polling it (admin)")
  )
  .add(
    HttpApiEndpoint.put("stop", "/agents/:agent_id/stop")
      .setPath(AgentPath)
      .addSuccess(Envelope(Empty))
      .annotate(OpenApi.Summary, "Stop attesting an agent: state TENANT_FAILED (10), its polling cancelled (admin)")
  )
  .add(
    HttpApiEndpoint.put("reactivate", "/agents/:agent_id/reactivate")
      .setPath(AgentPath)
      .addSuccess(Envelope(Empty))
      .annotate(OpenApi.Summary, "Restart attesting an agent from a fresh cycle, also after stop (Keylime keeps a stopped agent at 10) (admin)")
  )
  .addError(BadRequestE)
  // a signed inline runtime policy whose signature does not verify (Keylime's 401)
  .addError(UnauthorizedE)
  .addError(ForbiddenE)
  .addError(NotFoundE)
  .addError(ConflictE)
  .addError(InternalErrorE)
  .addError(ServiceUnavailableE)
  .middleware(V2Authorization)
{}
