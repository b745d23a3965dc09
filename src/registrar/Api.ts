/**
 * The registrar's HTTP API (spec §4.2, §5.6). Routes are written without a version prefix: the
 * platform strips `/v2.x` (src/http/versions.ts), so the same group serves every 2.x version.
 * Public operations (register, activate, version) and admin operations (list, show, delete) share
 * the group; each handler states its operation class to the authorization provider. The summaries
 * say who may call each one (docs/openapi/registrar.json, served at GET /openapi.json).
 */
import { HttpApi, HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { AgentId } from "../../schemas/Common.js"
import { BadRequestE, Empty, Envelope, ForbiddenE, InternalErrorE, NotFoundE, ServiceUnavailableE } from "../../schemas/Envelope.js"
import {
  ActivateRequest,
  AgentList,
  AgentRecord,
  RegisterRequest,
  RegisterResponse,
  RegisterWithIdRequest,
  VactivateRequest,
  VersionInfo
} from "../../schemas/Registrar.js"

// named as in Keylime, so a refused id is reported as `agent_id: ...`
const AgentPath = Schema.Struct({ agent_id: AgentId })

/** Activation is served on three method/route pairs (spec §5.6) with one contract. */
const activation = <const Name extends string>(method: "PUT" | "POST", name: Name, path: HttpApiEndpoint.PathSegment) =>
  HttpApiEndpoint.make(method)(name, path).setPath(AgentPath).setPayload(ActivateRequest).addSuccess(Envelope(Empty))
    .annotate(OpenApi.Summary, "Activate: auth_tag = hex HMAC-SHA384(key = base64 of the activated secret, agent id) (public)")

export class RegistrarAgents extends HttpApiGroup.make("agents")
  .add(HttpApiEndpoint.get("version", "/version").addSuccess(Envelope(VersionInfo)).annotate(OpenApi.Summary, "API versions served (public)"))
  .add(
    HttpApiEndpoint.get("list", "/agents")
      .addSuccess(Envelope(AgentList))
      .annotate(OpenApi.Summary, "List registered agent ids (admin: mTLS client certificate, HTTPS port)")
  )
  .add(
    HttpApiEndpoint.get("show", "/agents/:agent_id")
      .setPath(AgentPath)
      .addSuccess(Envelope(AgentRecord))
      .annotate(OpenApi.Summary, "An activated agent's record: EK, AK, contact address, mTLS certificate (admin)")
  )
  .add(
    HttpApiEndpoint.del("remove", "/agents/:agent_id")
      .setPath(AgentPath)
      .addSuccess(Envelope(Empty))
      .annotate(OpenApi.Summary, "Delete a registration (admin)")
  )
  .add(
    HttpApiEndpoint.post("register", "/agents/:agent_id")
      .setPath(AgentPath)
      .setPayload(RegisterRequest)
      .addSuccess(Envelope(RegisterResponse))
      .annotate(OpenApi.Summary, "Register: EK (certificate), AK, contact address; answers the credential blob (public, plain-HTTP port)")
  )
  .add(
    HttpApiEndpoint.post("registerWithBodyId", "/agents")
      .setPayload(RegisterWithIdRequest)
      .addSuccess(Envelope(RegisterResponse))
      .annotate(OpenApi.Summary, "Register with the agent id in the body (public)")
  )
  .add(activation("PUT", "activate", "/agents/:agent_id/activate"))
  .add(activation("POST", "activatePost", "/agents/:agent_id/activate"))
  // legacy activation route (spec §5.6)
  .add(activation("PUT", "activateLegacy", "/agents/:agent_id"))
  .add(
    HttpApiEndpoint.put("vactivate", "/agents/:agent_id/vactivate")
      .setPath(AgentPath)
      .setPayload(VactivateRequest)
      .addSuccess(Envelope(Empty))
      .annotate(OpenApi.Summary, "TPM 1.2 deep-quote activation: always refused (400)")
  )
  // every operation can be refused (authorization, bad input), name an agent that is not there, fail
  // internally (database), or find the database momentarily unreachable (503 with Retry-After)
  .addError(BadRequestE)
  .addError(ForbiddenE)
  .addError(NotFoundE)
  .addError(InternalErrorE)
  .addError(ServiceUnavailableE)
{}

export class RegistrarApi extends HttpApi.make("registrar").add(RegistrarAgents) {}

/** Exact texts (Keylime's, keylime-wire.md §1.3) and attest's own where Keylime says nothing useful. */
export const RegistrarText = {
  invalidData: "Could not register agent with invalid data",
  differentIdentity: "Agent re-registration with different TPM identity is forbidden for security reasons",
  concurrent: (id: string) =>
    `Agent with UUID '${id}' cannot be registered. This UUID is already in use or a concurrent registration is in progress.`,
  notFound: (id: string) => `Agent with ID '${id}' not found`,
  notActivated: (id: string) => `Agent with ID '${id}' has not been activated`,
  badAuthTag: (tag: string, id: string) =>
    `Auth tag '${tag}' for agent '${id}' does not match expected value. The agent has been deleted from the database and will need to be restarted to reattempt registration`,
  /** attest's own: an active registration is never deleted by an unauthenticated activation. */
  badAuthTagActive: (tag: string, id: string) =>
    `Auth tag '${tag}' for agent '${id}' does not match expected value. The agent's active registration is unchanged`,
  unavailable: "The registrar database is unavailable at the moment; retry later",
  raced: (id: string) => `Agent with ID '${id}' registered again during activation; activate the newest blob`,
  deepQuote:
    "Deep quotes (vactivate, for TPM 1.2 virtual TPMs) are not supported: attest registers TPM 2.0 agents only; use PUT /agents/<id>/activate"
} as const
